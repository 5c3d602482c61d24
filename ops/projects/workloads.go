package projects

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/data"
	"runr.dev/console/ops/gpu"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/store"
)

// QueueSecretName is the Secret that gives a project the region's Redis (REDIS_URL,
// REDIS_ADDRESS, REDIS_PASSWORD) when it has a queue stream.
func QueueSecretName(slug string) string { return slug + "-redis" }

// projectPod is the pod of a project of any kind, with the labels of its workload: plain
// env inline; secret env, the settings of its bindings (the names in bound) and the
// region's Redis through secretKeyRef, never inlined; the region's runtime class,
// dedicated workers and the project's GPUs.
func projectPod(r *store.Region, p *store.Project, bound []string) (map[string]any, map[string]any) {
	var env []any
	keys := make([]string, 0, len(p.EnvVars.V))
	for k := range p.EnvVars.V {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, map[string]any{"name": k, "value": p.EnvVars.V[k]})
	}
	skeys := make([]string, 0, len(p.Secrets))
	for k := range p.Secrets {
		skeys = append(skeys, k)
	}
	sort.Strings(skeys)
	for _, k := range skeys {
		env = append(env, secretEnv(k, SecretEnvName(p.Slug), k))
	}
	env = append(env, data.BindingEnv(p.Slug, bound)...)
	if p.QueueStream != "" {
		env = append(env, map[string]any{"name": "QUEUE_STREAM", "value": p.QueueStream},
			secretEnv("REDIS_ADDRESS", QueueSecretName(p.Slug), "address"),
			secretEnv("REDIS_PASSWORD", QueueSecretName(p.Slug), "password"),
			secretEnv("REDIS_URL", QueueSecretName(p.Slug), "url"))
	}
	container := map[string]any{
		"name":  "project",
		"image": p.Image,
		"resources": map[string]any{"requests": map[string]any{
			"cpu": strconv.Itoa(p.CPUm) + "m", "memory": strconv.Itoa(p.MemoryMi) + "Mi"}},
	}
	if p.Kind == store.ProjectHTTP {
		// Knative names the container itself (user-container).
		delete(container, "name")
	}
	if len(p.Command.V) > 0 {
		container["command"] = toAnySlice(p.Command.V)
	}
	if len(env) > 0 {
		container["env"] = env
	}
	podSpec := map[string]any{"containers": []any{container}}
	if class := r.Isolation.V.Class(ProjectWorkloadKind(p)); class != store.RuncClass {
		// The RuntimeClass brings its own node selector (the nodes that have the runtime).
		podSpec["runtimeClassName"] = class
	}
	if len(r.Nodes) > 0 {
		// Dedicated workers: the projects run there only.
		podSpec["nodeSelector"] = map[string]any{nodes.DedicatedKey: nodes.DedicatedValue}
		podSpec["tolerations"] = []any{map[string]any{"key": nodes.DedicatedKey, "operator": "Equal", "value": nodes.DedicatedValue, "effect": "NoSchedule"}}
	}
	gpu.AddGPUs(podSpec, container, p.GPU.V)
	labels := map[string]any{"runr.dev/region": r.Name, "runr.dev/project": p.ID, "app.kubernetes.io/managed-by": "runr"}
	return podSpec, labels
}

func secretEnv(name, secret, key string) map[string]any {
	return map[string]any{"name": name, "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": secret, "key": key}}}
}

func toAnySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// queueWorkerDeployment is a queue worker's Deployment: one replica that consumes its
// stream (always running; Recreate, so that a new version never consumes beside the old).
func queueWorkerDeployment(r *store.Region, p *store.Project, bound []string) map[string]any {
	podSpec, labels := projectPod(r, p, bound)
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": p.Slug, "namespace": r.Name, "labels": labels},
		"spec": map[string]any{
			"replicas": 1,
			"strategy": map[string]any{"type": "Recreate"},
			"selector": map[string]any{"matchLabels": map[string]any{"runr.dev/project": p.ID}},
			"template": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": podSpec},
		},
	}
}

// scheduledCronJob is a scheduled job's CronJob: runs never overlap, a failed run is
// retried twice, and the last three runs of each outcome are kept for their logs.
func scheduledCronJob(r *store.Region, p *store.Project, bound []string) map[string]any {
	podSpec, labels := projectPod(r, p, bound)
	podSpec["restartPolicy"] = "Never"
	return map[string]any{
		"apiVersion": "batch/v1", "kind": "CronJob",
		"metadata": map[string]any{"name": p.Slug, "namespace": r.Name, "labels": labels},
		"spec": map[string]any{
			"schedule":                   p.Schedule,
			"concurrencyPolicy":          "Forbid",
			"successfulJobsHistoryLimit": 3,
			"failedJobsHistoryLimit":     3,
			"jobTemplate": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": map[string]any{
				"backoffLimit": 2,
				"template":     map[string]any{"metadata": map[string]any{"labels": labels}, "spec": podSpec},
			}},
		},
	}
}

// applyQueueSecret writes (or, without a queue stream, deletes) the Secret with the
// region's Redis settings of a project.
func applyQueueSecret(ctx context.Context, c *kube.Cluster, r *store.Region, p *store.Project) error {
	name := QueueSecretName(p.Slug)
	if p.QueueStream == "" {
		return kit.DeleteSecret(ctx, c, r.Name, name)
	}
	if r.RedisStatus != store.ComponentReady || r.RedisAddress == "" {
		return fmt.Errorf("the region's Redis is not ready (%s): %s uses its stream %s", r.RedisStatus, p.Slug, p.QueueStream)
	}
	u := url.URL{Scheme: "redis", Host: r.RedisAddress}
	if r.RedisPassword != "" {
		u.User = url.UserPassword("", r.RedisPassword)
	}
	_, err := c.ApplyObject(ctx, map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": name, "namespace": r.Name, "labels": map[string]any{"runr.dev/project": p.ID, "app.kubernetes.io/managed-by": "runr"}},
		"stringData": map[string]any{"address": r.RedisAddress, "password": r.RedisPassword, "url": u.String()}})
	return err
}

// applyProjectWorkload creates or updates the workload of a project's kind and waits
// until it runs: a Knative Service Ready, a queue worker's Deployment available, a
// scheduled job's CronJob created (its runs come on schedule).
func (s *Service) applyProjectWorkload(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region, p *store.Project, bound []string) error {
	ns := r.Name
	switch p.Kind {
	case store.ProjectQueueWorker:
		if _, err := c.ApplyObject(ctx, queueWorkerDeployment(r, p, bound)); err != nil {
			return err
		}
		return jc.Wait(ctx, fmt.Sprintf("Deployment %s/%s (queue worker of stream %s) to be available", ns, p.Slug, p.QueueStream),
			engine.WaitOpts{}, c.DeploymentAvailable(ns, p.Slug))
	case store.ProjectScheduledJob:
		if _, err := c.ApplyObject(ctx, scheduledCronJob(r, p, bound)); err != nil {
			return err
		}
		jc.Note("CronJob %s/%s runs on the schedule %q", ns, p.Slug, p.Schedule)
		return nil
	}
	if err := s.enableKnativeFeatures(ctx, c, r.ServingNamespace); err != nil {
		return err
	}
	if _, err := c.ApplyObject(ctx, knativeService(r, p, bound)); err != nil {
		return err
	}
	return jc.Wait(ctx, fmt.Sprintf("Knative Service %s/%s to be Ready", ns, p.Slug), engine.WaitOpts{}, c.ResourceJudged(kube.GVKKService, ns, p.Slug, func(o *unstructured.Unstructured) (bool, string, error) {
		gen, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
		ready, msg := kube.ReadyCondition(o)
		return ready && gen >= o.GetGeneration(), msg, nil
	}))
}

// undeployProject deletes whatever workload a project has on a cluster (of any kind:
// what it ran before is gone too) with its Secrets. A Deployment or CronJob of the
// project's name that is not the project's own (its runr.dev/project label) is left alone.
func undeployProject(ctx context.Context, c *kube.Cluster, ns string, p *store.Project) error {
	for _, gvk := range []schema.GroupVersionKind{kube.GVKKService, kube.GVKDeployment, kube.GVKCronJob} {
		o, found, err := c.Get(ctx, gvk, ns, p.Slug)
		if err != nil {
			if meta.IsNoMatchError(errors.Unwrap(err)) || meta.IsNoMatchError(err) {
				continue // e.g. no Knative on the cluster: no Knative Service either
			}
			return err
		}
		if !found || o.GetLabels()["runr.dev/project"] != p.ID {
			continue
		}
		if err := c.Delete(ctx, gvk, ns, p.Slug); err != nil {
			return err
		}
	}
	for _, name := range []string{SecretEnvName(p.Slug), data.BindingsSecretName(p.Slug), QueueSecretName(p.Slug)} {
		if err := kit.DeleteSecret(ctx, c, ns, name); err != nil {
			return err
		}
	}
	return nil
}

// validQueueStream reports a Redis stream name a project may use.
func validQueueStream(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:") == ""
}

// maxCommandBytes bounds a project's command (the demo projects' scripts are a few KiB).
const maxCommandBytes = 32 << 10

// applyProjectKind validates and applies the kind and its settings: the kind is chosen
// at creation; a scheduled job needs a cron schedule, a queue worker a stream (and is
// always on); only scheduled jobs have a schedule.
func applyProjectKind(p *store.Project, in ProjectInput, creating bool, errs map[string]string) {
	if in.Kind != nil {
		switch {
		case creating && slices.Contains(store.ProjectKinds, *in.Kind):
			p.Kind = *in.Kind
		case creating:
			errs["kind"] = "Choose http, queue_worker or scheduled_job."
		case *in.Kind != p.Kind:
			errs["kind"] = "A project's kind is chosen when it is created: create another project for another kind."
		}
	}
	if p.Kind == "" {
		p.Kind = store.ProjectHTTP
	}
	if in.Schedule != nil {
		p.Schedule = strings.TrimSpace(*in.Schedule)
	}
	switch {
	case p.Kind == store.ProjectScheduledJob && p.Schedule == "":
		errs["schedule"] = "Give the schedule in cron's five fields, e.g. */15 * * * * for every 15 minutes."
	case p.Kind == store.ProjectScheduledJob:
		if _, err := cron.ParseStandard(p.Schedule); err != nil || strings.HasPrefix(p.Schedule, "TZ=") || strings.HasPrefix(p.Schedule, "CRON_TZ=") {
			errs["schedule"] = "Not a cron schedule (minute hour day-of-month month day-of-week, e.g. 0 3 * * *)."
		}
	case p.Schedule != "":
		errs["schedule"] = "Only scheduled jobs have a schedule."
	}
	if in.QueueStream != nil {
		p.QueueStream = strings.TrimSpace(*in.QueueStream)
	}
	switch {
	case p.Kind == store.ProjectQueueWorker && p.QueueStream == "":
		errs["queue_stream"] = "Name the Redis stream the worker consumes, e.g. orders."
	case p.QueueStream != "" && !validQueueStream(p.QueueStream):
		errs["queue_stream"] = "Use up to 100 letters, digits and - _ . : for the stream's name."
	}
	if p.Kind == store.ProjectQueueWorker {
		p.AlwaysOn = true
	} else if p.AlwaysOn && p.Kind != store.ProjectHTTP {
		errs["always_on"] = "Only HTTP functions scale; a scheduled job runs on its schedule."
	}
	if in.Command != nil {
		n := 0
		for _, a := range *in.Command {
			n += len(a)
		}
		if n > maxCommandBytes {
			errs["command"] = fmt.Sprintf("Keep the command under %d KiB; put longer programs in the image.", maxCommandBytes>>10)
		}
		p.Command.V = *in.Command
	}
}

// kindPrerequisites says what the region lacks for a project's kind ("" when nothing):
// HTTP functions need Knative Serving, a queue stream the region's Redis.
func kindPrerequisites(r *store.Region, p *store.Project) string {
	var missing []string
	if p.Kind == store.ProjectHTTP && r.ServingStatus != store.ComponentReady {
		missing = append(missing, "Knative Serving ("+statusWord(r.ServingStatus)+")")
	}
	if p.QueueStream != "" && r.RedisStatus != store.ComponentReady {
		missing = append(missing, "the region's Redis ("+statusWord(r.RedisStatus)+")")
	}
	if len(missing) == 0 {
		return ""
	}
	return p.Kind.Label() + " " + p.Slug + " needs " + strings.Join(missing, " and ") + " on region " + r.Name + "."
}

// statusWord is a component status as a sentence reads it.
func statusWord(s store.ComponentStatus) string {
	if s == "" {
		return "not installed"
	}
	return strings.ReplaceAll(string(s), "_", " ")
}
