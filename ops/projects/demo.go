package projects

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// Job kinds of the demo projects.
const (
	KindDemoInstall = "demo-install"
	KindDemoRemove  = "demo-remove"
)

// DemoSMTPName is the demo's SMTP catcher (Deployment and Service in the project
// namespace): the mailer sends to it, and its web page shows what arrived.
const DemoSMTPName = "runr-demo-smtp"

//go:embed demo/*.py
var demoPrograms embed.FS

// demoProject is one of the four demo projects.
type demoProject struct {
	name     string
	kind     store.ProjectKind
	programs []string // the files of demo/ its Python program is made of, in order
	schedule string
	// stream: the project uses the demo's Redis stream.
	stream bool
	env    func(r *store.Region, slugs map[string]string) map[string]string
}

// demoProjects are the demo's projects: a frontend and a backend (HTTP functions), a
// queue-triggered e-mail sender and a scheduled statistics job.
var demoProjects = []demoProject{
	{name: "Demo backend", kind: store.ProjectHTTP, programs: []string{"resp.py", "http_reply.py", "backend.py"}, stream: true},
	{name: "Demo frontend", kind: store.ProjectHTTP, programs: []string{"resp.py", "http_reply.py", "frontend.py"}, stream: true,
		env: func(r *store.Region, slugs map[string]string) map[string]string {
			// The backend's cluster-local address (Knative's <service>.<namespace>.svc).
			return map[string]string{"BACKEND_URL": "http://" + slugs["Demo backend"] + "." + r.Name + ".svc.cluster.local"}
		}},
	{name: "Demo mailer", kind: store.ProjectQueueWorker, programs: []string{"resp.py", "mailer.py"}, stream: true,
		env: func(r *store.Region, _ map[string]string) map[string]string {
			return map[string]string{"SMTP_HOST": DemoSMTPName + "." + r.Name + ".svc.cluster.local", "SMTP_PORT": "1025"}
		}},
	{name: "Demo stats", kind: store.ProjectScheduledJob, programs: []string{"resp.py", "stats.py"}, stream: true, schedule: "*/5 * * * *"},
}

// DemoStream is the Redis stream of a region's demo (one per region: an external Redis
// may serve several regions).
func DemoStream(r *store.Region) string { return "runr-demo-emails-" + r.Name }

// demoProgram is a demo project's Python program, its files joined.
func demoProgram(files []string) (string, error) {
	var b strings.Builder
	for _, f := range files {
		raw, err := demoPrograms.ReadFile("demo/" + f)
		if err != nil {
			return "", fmt.Errorf("demo program %s: %w", f, err)
		}
		b.Write(raw)
		b.WriteString("\n")
	}
	return b.String(), nil
}

// DemoPrerequisites names what the region lacks for the demo projects: Knative Serving,
// Redis and the registry, each ready ("" when nothing).
func DemoPrerequisites(r *store.Region) string {
	var missing []string
	if r.ServingStatus != store.ComponentReady {
		missing = append(missing, "Knative Serving ("+statusWord(r.ServingStatus)+")")
	}
	if r.RedisStatus != store.ComponentReady {
		missing = append(missing, "Redis ("+statusWord(r.RedisStatus)+")")
	}
	if !registryReady(r) {
		missing = append(missing, "the registry ("+statusWord(r.RegistryStatus)+")")
	}
	if len(missing) == 0 {
		return ""
	}
	return "The demo projects need " + strings.Join(missing, ", ") + " to be ready on region " + r.Name + "."
}

// registryReady reports a registry the region's nodes pull through: RunR's Zot ready, or
// an external registry that passed its test.
func registryReady(r *store.Region) bool {
	switch r.RegistryMode {
	case store.RegistryInternal:
		return r.RegistryStatus == store.ComponentReady
	case store.RegistryExternal:
		return r.RegistryStatus == store.ComponentReady || r.RegistryStatus == store.ComponentExternal
	}
	return false
}

// DemoParams name the demo projects a job deploys.
type DemoParams struct {
	Projects []DemoRef `json:"projects"`
}

// DemoRef names a demo project of a job.
type DemoRef struct {
	ID   string `json:"id"`
	Slug string `json:"slug"`
}

// InstallDemos records the demo projects the region lacks and queues their deploy (with
// the SMTP catcher); refused (422) naming the prerequisites that are not ready. Installing
// again deploys the existing demo projects again, so a failed install is completed by a retry.
func (s *Service) InstallDemos(ctx context.Context, actor kit.Actor, r *store.Region) (*store.Job, error) {
	if why := DemoPrerequisites(r); why != "" {
		return nil, &problem.Refused{Reason: why}
	}
	if why := notActiveRefusal(r); why != "" {
		return nil, &problem.Refused{Reason: why}
	}
	if b, err := s.Busy(ctx, r.ID, KindDemoInstall, KindDemoRemove); err != nil || b {
		if err == nil {
			err = &problem.Refused{Reason: "A demo projects job of this region runs already; wait for it to finish."}
		}
		return nil, err
	}
	// The demo projects are the region's owner's (a tenant's region: the tenant's).
	ctx = store.WithTenant(ctx, r.Tenant())
	have, err := s.Store.DemoProjects(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	byName := map[string]*store.Project{}
	for i := range have {
		byName[have[i].Name] = &have[i]
	}
	program := map[string]string{}
	for _, d := range demoProjects {
		if program[d.name], err = demoProgram(d.programs); err != nil {
			return nil, err
		}
	}
	demoImage, err := s.RegionImage(ctx, r, s.Cfg.DemoImage)
	if err != nil {
		return nil, err
	}
	slugs := map[string]string{}
	var refs []DemoRef
	for _, d := range demoProjects {
		p := byName[d.name]
		if p == nil {
			p = &store.Project{Name: d.name, RegionID: store.Ptr(r.ID), Image: demoImage, CPUm: 50, MemoryMi: 64,
				Kind: d.kind, Schedule: d.schedule, Demo: true, AlwaysOn: d.kind == store.ProjectQueueWorker}
			if d.stream {
				p.QueueStream = DemoStream(r)
			}
			p.Command.V = []string{"python3", "-u", "-c", program[d.name]}
			if d.env != nil {
				p.EnvVars.V = d.env(r, slugs)
			}
			if err := s.Store.CreateProject(ctx, p); err != nil {
				return nil, fmt.Errorf("create demo project %s: %w", d.name, err)
			}
		}
		slugs[d.name] = p.Slug
		refs = append(refs, DemoRef{ID: p.ID, Slug: p.Slug})
	}
	s.Log.Info("demo projects recorded", "region", r.Name, "user", actor.Email)
	return s.Enqueue(ctx, engine.Request{Kind: KindDemoInstall, Title: "Install the demo projects of " + r.Name, Subject: r.ID,
		Params: DemoParams{Projects: refs}, CreatedBy: actor.Email})
}

// RemoveDemos queues the removal of exactly what the demo projects created: the demo
// projects (their workloads, Secrets and records), the SMTP catcher and the demo's
// stream and statistics in the region's Redis.
func (s *Service) RemoveDemos(ctx context.Context, actor kit.Actor, r *store.Region) (*store.Job, error) {
	if b, err := s.Busy(ctx, r.ID, KindDemoInstall, KindDemoRemove); err != nil || b {
		if err == nil {
			err = &problem.Refused{Reason: "A demo projects job of this region runs already; wait for it to finish."}
		}
		return nil, err
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindDemoRemove, Title: "Remove the demo projects of " + r.Name, Subject: r.ID, CreatedBy: actor.Email})
}

// TeardownParts is the removal of the demo projects when the region has any, for the
// removal of a region with what the console installed.
func (s *Service) TeardownParts(ctx context.Context, r *store.Region) ([]engine.Part, error) {
	ps, err := s.Store.DemoProjects(ctx, r.ID)
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	p, err := engine.PartOf("Demo projects", engine.Request{Kind: KindDemoRemove, Subject: r.ID})
	return []engine.Part{p}, err
}

func (s *Service) registerDemoKinds() {
	s.Engine.Register(&engine.Kind{Name: KindDemoInstall, Plan: func(jc *engine.JobContext) ([]engine.Step, error) {
		var dp DemoParams
		if err := jc.Params(&dp); err != nil {
			return nil, err
		}
		steps := []engine.Step{s.RegionStep("smtp", "The SMTP catcher "+DemoSMTPName, s.DemoSMTP)}
		for _, p := range dp.Projects {
			steps = append(steps, s.RegionStep("deploy-"+p.Slug, "Deploy "+p.Slug, s.demoDeploy(p.ID)))
		}
		return steps, nil
	}})
	s.Engine.Register(&engine.Kind{Name: KindDemoRemove, Plan: func(*engine.JobContext) ([]engine.Step, error) {
		return []engine.Step{
			s.RegionStep("projects", "Remove the demo projects", s.demoRemoveProjects),
			s.RegionStep("smtp", "Remove the SMTP catcher "+DemoSMTPName, func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
				if err := c.Delete(ctx, kube.GVKDeployment, r.Name, DemoSMTPName); err != nil {
					return err
				}
				if err := c.Delete(ctx, kube.GVKService, r.Name, DemoSMTPName); err != nil {
					return err
				}
				jc.Note("Deleted Deployment and Service %s/%s", r.Name, DemoSMTPName)
				return nil
			}),
			s.RegionStep("redis", "Delete the demo's stream from Redis", s.demoForgetStream),
		}, nil
	}})
}

// DemoSMTP deploys the SMTP catcher (Mailpit: SMTP on 1025, its web page on 8025) and
// waits for it.
func (s *Service) DemoSMTP(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	ns := r.Name
	if _, err := kit.EnsureNamespace(ctx, jc, c, ns, map[string]string{"runr.dev/region": r.Name}); err != nil {
		return err
	}
	image, err := s.RegionImage(ctx, r, s.Cfg.DemoSMTPImage)
	if err != nil {
		return err
	}
	labels := map[string]any{"app.kubernetes.io/name": DemoSMTPName, "app.kubernetes.io/part-of": "runr-demo", "app.kubernetes.io/managed-by": "runr"}
	for _, o := range []map[string]any{
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": DemoSMTPName, "namespace": ns, "labels": labels},
			"spec": map[string]any{"replicas": 1,
				"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": DemoSMTPName}},
				"template": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": map[string]any{
					"containers": []any{map[string]any{"name": "mailpit", "image": image,
						"ports":     []any{map[string]any{"name": "smtp", "containerPort": 1025}, map[string]any{"name": "http", "containerPort": 8025}},
						"resources": map[string]any{"requests": map[string]any{"cpu": "10m", "memory": "32Mi"}, "limits": map[string]any{"memory": "128Mi"}}}},
				}}}},
		{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": DemoSMTPName, "namespace": ns, "labels": labels},
			"spec": map[string]any{"selector": map[string]any{"app.kubernetes.io/name": DemoSMTPName}, "ports": []any{
				map[string]any{"name": "smtp", "port": 1025, "targetPort": "smtp"}, map[string]any{"name": "http", "port": 8025, "targetPort": "http"}}}},
	} {
		if _, err := c.ApplyObject(ctx, o); err != nil {
			return err
		}
	}
	if err := jc.Wait(ctx, "Deployment "+ns+"/"+DemoSMTPName+" (the SMTP catcher) to be available", engine.WaitOpts{}, c.DeploymentAvailable(ns, DemoSMTPName)); err != nil {
		return err
	}
	jc.Note("The SMTP catcher takes mail at %s.%s.svc.cluster.local:1025; its page: kubectl -n %s port-forward svc/%s 8025", DemoSMTPName, ns, ns, DemoSMTPName)
	return nil
}

// demoDeploy deploys one demo project as a deploy of the project would (the same checks).
func (s *Service) demoDeploy(id string) func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		p, err := s.Store.ProjectByID(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			jc.Note("The demo project was removed meanwhile")
			return engine.ErrSkip
		}
		if err != nil {
			return err
		}
		if err := s.DeployCheck(ctx, r, p, true); err != nil {
			_ = s.Store.SetProjectState(ctx, p.ID, p.State, "deploy refused: "+err.Error(), "")
			return err
		}
		if err := s.Deploy(ctx, jc, c, r, p); err != nil {
			_ = s.Store.SetProjectState(ctx, p.ID, p.State, "deploy failed: "+err.Error(), "")
			return err
		}
		jc.Note("%s (%s) runs", p.Slug, p.Kind.Label())
		return s.Store.SetProjectState(ctx, p.ID, store.ProjectRunning, "", p.Image)
	}
}

// demoRemoveProjects removes each demo project of the region: its workload, Secrets and
// bindings on the cluster, then its record.
func (s *Service) demoRemoveProjects(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	ctx = store.WithTenant(ctx, r.Tenant())
	ps, err := s.Store.DemoProjects(ctx, r.ID)
	if err != nil {
		return err
	}
	if len(ps) == 0 {
		jc.Note("The region has no demo projects")
	}
	for i := range ps {
		p := &ps[i]
		if err := undeployProject(ctx, c, r.Name, p); err != nil {
			return err
		}
		if err := s.data.UnbindAll(ctx, jc, c, r, p); err != nil {
			return err
		}
		if err := s.Store.DeleteProject(ctx, p.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		jc.Note("Removed demo project %s", p.Slug)
	}
	return nil
}

// demoForgetStream deletes the demo's stream and statistics from the region's Redis (a
// Job with redis-cli); nothing to do when the region has no Redis any more.
func (s *Service) demoForgetStream(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	if r.RedisStatus != store.ComponentReady || r.RedisAddress == "" {
		jc.Note("The region has no Redis now: no demo stream to delete")
		return engine.ErrSkip
	}
	stream := DemoStream(r)
	return s.redis.Job(ctx, jc, c, r, "runr-demo-forget", "delete "+stream+" and "+stream+":stats",
		`test "$(redis-cli -h "$HOST" -p "$PORT" --no-auth-warning -a "$REDIS_PASSWORD" DEL "$STREAM" "$STREAM:stats")" -ge 0`,
		map[string]string{"STREAM": stream})
}
