package redis

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/crypt"
	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// Job kinds of Redis.
const (
	KindRedisInstall = "redis-install"
	KindRedisRemove  = "redis-remove"
	KindRedisTest    = "redis-test"
)

// RedisName is the managed Redis's Deployment, Service and Secret in the project namespace.
const RedisName = "runr-redis"

// Params configure the region's Redis.
type Params struct {
	Mode    store.RedisMode `json:"mode"`
	Address string          `json:"address,omitempty"`
}

// EnqueueInstall queues the managed Redis of a region.
func (s *Service) EnqueueInstall(ctx context.Context, r *store.Region, by string) (*store.Job, error) {
	return s.Enqueue(ctx, engine.Request{Kind: KindRedisInstall, Title: "Install the managed Redis of " + r.Name, Subject: r.ID,
		Params: Params{Mode: store.RedisManaged}, CreatedBy: by})
}

// Input is the body of POST /api/knative-regions/{id}/redis.
type Input struct {
	Mode     store.RedisMode `json:"mode"`
	Address  string          `json:"address"`
	Password string          `json:"password"`
}

// inClusterHostRe is a Service's name inside a cluster: <service>.<namespace>.svc[.cluster.local].
var inClusterHostRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?\.[a-z0-9]([-a-z0-9]*[a-z0-9])?\.svc(\.cluster\.local)?$`)

// Validate checks a Redis mode and the address it needs (none for managed or none,
// host:port for an external Redis, a Service's address for one in the cluster), keyed by
// the fields "mode" and "address"; empty when both are fine.
func Validate(mode store.RedisMode, address string) map[string]string {
	switch mode {
	case store.RedisManaged, store.RedisNone:
		return nil
	case store.RedisExternal:
		if m := kit.ValidateHostPort(address); m != "" {
			return map[string]string{"address": m}
		}
		return nil
	case store.RedisInCluster:
		host, _, _ := strings.Cut(address, ":")
		if m := kit.ValidateHostPort(address); m != "" || !inClusterHostRe.MatchString(host) {
			return map[string]string{"address": "Give the Redis Service's address in the cluster: <service>.<namespace>.svc[.cluster.local]:<port>, e.g. redis.queues.svc:6379."}
		}
		return nil
	}
	return map[string]string{"mode": "Choose managed, external, in_cluster or none."}
}

// SetRedis queues the region's Redis: the managed one, an external one at host:port, or
// one in the cluster at a Service's address.
func (s *Service) SetRedis(ctx context.Context, actor kit.Actor, r *store.Region, in Input) (*store.Job, error) {
	if in.Mode == store.RedisNone {
		return nil, &problem.Invalid{Fields: map[string]string{"mode": "Choose managed, external or in_cluster; remove the Redis to have none."}}
	}
	if errs := Validate(in.Mode, in.Address); errs != nil {
		return nil, &problem.Invalid{Fields: errs}
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindRedisInstall, Title: "Set up the Redis of " + r.Name, Subject: r.ID,
		Params: Params{Mode: in.Mode, Address: in.Address}, Secret: in.Password, CreatedBy: actor.Email})
}

// RemoveRedis queues the removal of the region's Redis.
func (s *Service) RemoveRedis(ctx context.Context, actor kit.Actor, r *store.Region) (*store.Job, error) {
	req := removeRequest(r)
	req.CreatedBy = actor.Email
	return s.Enqueue(ctx, req)
}

func removeRequest(r *store.Region) engine.Request {
	return engine.Request{Kind: KindRedisRemove, Title: "Remove the Redis of " + r.Name, Subject: r.ID}
}

// TeardownParts is the removal of the region's managed Redis, for the removal of a
// region with what the console installed (an external Redis is not the console's).
func (s *Service) TeardownParts(r *store.Region) ([]engine.Part, error) {
	if r.RedisMode != store.RedisManaged {
		return nil, nil
	}
	p, err := engine.PartOf("Redis", removeRequest(r))
	return []engine.Part{p}, err
}

// TestRedis queues a PING of the region's Redis from a pod.
func (s *Service) TestRedis(ctx context.Context, actor kit.Actor, r *store.Region) (*store.Job, error) {
	if r.RedisAddress == "" {
		return nil, &problem.Refused{Reason: "The region has no Redis to test: install the managed Redis or set an external one."}
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindRedisTest, Title: "Test the Redis of " + r.Name, Subject: r.ID, CreatedBy: actor.Email})
}

func (s *Service) registerKinds() {
	s.Engine.Register(&engine.Kind{
		Name: KindRedisInstall,
		Plan: engine.PlanWith(func(p Params) []engine.Step {
			return []engine.Step{s.RegionStep("redis", "Redis", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
				if !p.Mode.Given() {
					return s.InstallManaged(ctx, jc, c, r)
				}
				if err := deleteManagedRedis(ctx, c, r.Name); err != nil {
					return err
				}
				if p.Mode == store.RedisInCluster {
					jc.Note("The Redis in the cluster at %s", p.Address)
				} else {
					jc.Note("External Redis at %s", p.Address)
				}
				return s.Store.UpdateRedis(ctx, r.ID, store.RedisUpdate{Mode: store.Ptr(p.Mode), Status: store.Ptr(store.ComponentReady), Address: store.Ptr(p.Address), Password: store.Ptr(jc.Secret), Message: store.Ptr("")})
			})}
		}),
		Finished: func(ctx context.Context, jc *engine.JobContext, err error) {
			if err != nil {
				s.Record(s.Store.UpdateRedis(ctx, jc.Job.Region(), store.RedisUpdate{Status: store.Ptr(store.ComponentError), Message: store.Ptr(err.Error())}))
			}
		},
	})
	s.Engine.Register(&engine.Kind{Name: KindRedisRemove, Plan: engine.Fixed(
		s.RegionStep("remove", "Remove Redis", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			if err := deleteManagedRedis(ctx, c, r.Name); err != nil {
				return err
			}
			jc.Note("Removed the region's Redis and its settings")
			return s.Store.UpdateRedis(ctx, r.ID, store.RedisUpdate{Mode: store.Ptr(store.RedisNone), Status: store.Ptr(store.ComponentNotInstalled), Address: store.Ptr(""), Password: store.Ptr(""), Message: store.Ptr("")})
		}),
	)})
	s.Engine.Register(&engine.Kind{Name: KindRedisTest, Plan: engine.Fixed(
		s.RegionStep("ping", "PING from a pod in the cluster", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			return s.redisPing(ctx, jc, c, r)
		}),
	)})
}

// InstallManaged installs the region's own Redis in its namespace and records it.
func (s *Service) InstallManaged(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region) error {
	s.Record(s.Store.UpdateRedis(ctx, jc.Job.Region(), store.RedisUpdate{Status: store.Ptr(store.ComponentInstalling), Mode: store.Ptr(store.RedisManaged), Message: store.Ptr("")}))
	ns := r.Name
	if _, err := kit.EnsureNamespace(ctx, jc, c, ns, map[string]string{"runr.dev/region": r.Name}); err != nil {
		return err
	}
	password := r.RedisPassword
	if r.RedisMode != store.RedisManaged || password == "" {
		password = crypt.RandomToken("")[:32]
	}
	image, err := s.RegionImage(ctx, r, s.Cfg.RedisImage)
	if err != nil {
		return err
	}
	labels := map[string]any{"app.kubernetes.io/name": RedisName, "app.kubernetes.io/managed-by": "runr"}
	objs := []map[string]any{
		{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": RedisName, "namespace": ns, "labels": labels},
			"stringData": map[string]any{"password": password}},
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": RedisName, "namespace": ns, "labels": labels},
			"spec": map[string]any{
				"replicas": 1,
				"strategy": map[string]any{"type": "Recreate"},
				"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": RedisName}},
				"template": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": map[string]any{
					"containers": []any{map[string]any{
						"name": "redis", "image": image,
						"args":      []any{"--requirepass", "$(REDIS_PASSWORD)", "--appendonly", "no"},
						"env":       []any{map[string]any{"name": "REDIS_PASSWORD", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": RedisName, "key": "password"}}}},
						"ports":     []any{map[string]any{"name": "redis", "containerPort": 6379}},
						"resources": map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}, "limits": map[string]any{"memory": "256Mi"}},
					}},
				}},
			}},
		{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": RedisName, "namespace": ns, "labels": labels},
			"spec": map[string]any{"selector": map[string]any{"app.kubernetes.io/name": RedisName},
				"ports": []any{map[string]any{"name": "redis", "port": 6379, "targetPort": "redis"}}}},
	}
	for _, o := range objs {
		if _, err := c.ApplyObject(ctx, o); err != nil {
			return err
		}
	}
	if err := jc.Wait(ctx, "Deployment "+ns+"/"+RedisName+" to be available", engine.WaitOpts{}, c.DeploymentAvailable(ns, RedisName)); err != nil {
		return err
	}
	addr := fmt.Sprintf("%s.%s.svc.cluster.local:6379", RedisName, ns)
	jc.Note("Managed Redis serves at %s", addr)
	return s.Store.UpdateRedis(ctx, r.ID, store.RedisUpdate{Mode: store.Ptr(store.RedisManaged), Status: store.Ptr(store.ComponentReady), Address: store.Ptr(addr), Password: store.Ptr(password), Message: store.Ptr("")})
}

func deleteManagedRedis(ctx context.Context, c *kube.Cluster, ns string) error {
	if err := c.Clientset.AppsV1().Deployments(ns).Delete(ctx, RedisName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Deployment %s/%s: %w", ns, RedisName, err)
	}
	if err := c.Clientset.CoreV1().Services(ns).Delete(ctx, RedisName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Service %s/%s: %w", ns, RedisName, err)
	}
	if err := c.Clientset.CoreV1().Secrets(ns).Delete(ctx, RedisName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Secret %s/%s: %w", ns, RedisName, err)
	}
	return nil
}

// redisPing runs redis-cli PING from a pod in the cluster (a Job) and reads its result.
func (s *Service) redisPing(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region) error {
	return s.Job(ctx, jc, c, r, "runr-redis-ping", "PING "+r.RedisAddress,
		`test "$(redis-cli -h "$HOST" -p "$PORT" --no-auth-warning -a "$REDIS_PASSWORD" PING)" = PONG`, nil)
}

// Job runs a redis-cli script against the region's Redis from a pod in the cluster
// (the Job name, replacing one left before) and waits for it to succeed. The script gets
// HOST, PORT, REDIS_PASSWORD (from a Secret) and env.
func (s *Service) Job(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region, name, what, script string, env map[string]string) error {
	if r.RedisAddress == "" {
		return fmt.Errorf("the region has no Redis address: install the managed Redis or set an external one first")
	}
	ns := r.Name
	if _, err := kit.EnsureNamespace(ctx, jc, c, ns, map[string]string{"runr.dev/region": r.Name}); err != nil {
		return err
	}
	host, port := r.RedisAddress, "6379"
	if i := strings.LastIndex(host, ":"); i > 0 {
		host, port = host[:i], host[i+1:]
	}
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name, "namespace": ns,
		"labels": kit.ToAnyMap(kit.ManagedLabels(nil))}, "stringData": map[string]any{"password": r.RedisPassword}}
	if _, err := c.ApplyObject(ctx, secret); err != nil {
		return err
	}
	jobs := c.Clientset.BatchV1().Jobs(ns)
	bg := metav1.DeletePropagationBackground
	_ = jobs.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if err := jc.Wait(ctx, "the previous Job "+name+" to be deleted", engine.WaitOpts{}, func(ctx context.Context) (bool, string, error) {
		_, err := jobs.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), "", nil
	}); err != nil {
		return err
	}
	vars := []corev1.EnvVar{{Name: "HOST", Value: host}, {Name: "PORT", Value: port},
		{Name: "REDIS_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "password"}}}}
	for _, k := range kit.SortedKeys(env) {
		vars = append(vars, corev1.EnvVar{Name: k, Value: env[k]})
	}
	image, err := s.RegionImage(ctx, r, s.Cfg.RedisImage)
	if err != nil {
		return err
	}
	backoff, ttl := int32(0), int32(300)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: kit.ManagedLabels(nil)},
		Spec: batchv1.JobSpec{BackoffLimit: &backoff, TTLSecondsAfterFinished: &ttl, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "redis-cli", Image: image,
				Command: []string{"sh", "-c", script}, Env: vars}},
		}}}}
	if _, err := jobs.Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Job %s/%s: %w", ns, name, err)
	}
	if err := jc.Wait(ctx, fmt.Sprintf("Job %s/%s to %s", ns, name, what), engine.WaitOpts{
		Timeout: s.Cfg.StorageTestTimeout, Hint: "check the address and password, and that the cluster reaches the Redis"}, c.JobComplete(ns, name)); err != nil {
		return err
	}
	jc.Note("%s: done (Job %s/%s succeeded)", what, ns, name)
	return nil
}
