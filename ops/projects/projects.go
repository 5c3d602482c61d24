package projects

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/gpu"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// Job kinds of projects.
const (
	KindDeployProject = "project-deploy"
	KindStopProject   = "project-stop"
	KindDeleteProject = "project-delete"
	KindMoveProject   = "project-move"
)

// ProjectParams name the project of a job.
type ProjectParams struct {
	ProjectID string `json:"project_id"`
	// Resume deploys a stopped project again.
	Resume bool `json:"resume,omitempty"`
	// From is the region a project moves away from.
	From string `json:"from,omitempty"`
}

// ErrProjectStopped refuses the deploy of a stopped project.
var ErrProjectStopped = errors.New("the project is stopped: resume it to deploy it")

// DeployCheck runs the deploy checks: a stopped project is refused (unless resumed),
// and so is one in a region that is not active (also in a move's redeploy), one whose data location or image the region does not allow (supplyChainGate),
// or that would exceed its region's capacity, a fixed region's allocation or, a tenant's
// project on a platform region, its tenant's quota there.
func (s *Service) DeployCheck(ctx context.Context, r *store.Region, p *store.Project, resume bool) error {
	if p.State == store.ProjectStopped && !resume {
		return ErrProjectStopped
	}
	if p.Image == "" {
		return errors.New("the project has no image to deploy")
	}
	if why := notActiveRefusal(r); why != "" {
		return &problem.Refused{Reason: why}
	}
	if why := isolation.WorkloadClassRefusal(r, ProjectWorkloadKind(p)); why != "" {
		return &problem.Refused{Reason: why}
	}
	if err := s.admission.Gate(ctx, r, p); err != nil {
		return err
	}
	if err := s.gpu.Admission(ctx, r, p); err != nil {
		return err
	}
	req := nodes.AdmitRequest{ProjectID: p.ID, CPUm: int64(p.CPUm), MemoryMi: int64(p.MemoryMi), AlwaysOn: p.AlwaysOn}
	if err := s.nodes.Admit(ctx, r, req); err != nil {
		return err
	}
	if err := s.billing.Admit(ctx, r, p); err != nil {
		return err
	}
	return s.tenancy.AdmitTenant(ctx, r, p, req)
}

// ProjectWorkloadKind is the workload kind a project runs as: a scheduled job's runs are
// jobs; a queue worker and an always-on function are services; else a function.
func ProjectWorkloadKind(p *store.Project) string {
	if p.Kind == store.ProjectScheduledJob {
		return store.WorkloadJobs
	}
	if p.AlwaysOn || p.Kind == store.ProjectQueueWorker {
		return store.WorkloadServices
	}
	return store.WorkloadFunctions
}

// SecretEnvName is the Secret that holds a project's secret env vars.
func SecretEnvName(slug string) string { return slug + "-secret-env" }

// knativeService is an HTTP function's Knative Service (see projectPod for its pod).
func knativeService(r *store.Region, p *store.Project, bound []string) map[string]any {
	podSpec, labels := projectPod(r, p, bound)
	annotations := map[string]any{}
	if p.AlwaysOn {
		annotations["autoscaling.knative.dev/min-scale"] = "1"
	}
	if r.Settings.V.RequestTimeout > 0 {
		podSpec["timeoutSeconds"] = r.Settings.V.RequestTimeout
	}
	return map[string]any{
		"apiVersion": "serving.knative.dev/v1", "kind": "Service",
		"metadata": map[string]any{"name": p.Slug, "namespace": r.Name, "labels": labels},
		"spec": map[string]any{"template": map[string]any{
			"metadata": map[string]any{"labels": labels, "annotations": annotations},
			"spec":     podSpec,
		}},
	}
}

// Deploy creates or updates the project's workload (applyProjectWorkload) and its
// Secrets in the region's project namespace and waits until it runs.
func (s *Service) Deploy(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region, p *store.Project) error {
	if p.Kind == store.ProjectHTTP && r.ServingStatus != store.ComponentReady {
		return fmt.Errorf("Knative Serving is not ready on region %s", r.Name)
	}
	ns := r.Name
	if _, err := kit.EnsureNamespace(ctx, jc, c, ns, map[string]string{"runr.dev/region": r.Name}); err != nil {
		return err
	}
	secrets := c.Clientset.CoreV1().Secrets(ns)
	if len(p.Secrets) > 0 {
		data := map[string]any{}
		for k, v := range p.Secrets {
			data[k] = v
		}
		if _, err := c.ApplyObject(ctx, map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata":   map[string]any{"name": SecretEnvName(p.Slug), "namespace": ns, "labels": map[string]any{"runr.dev/project": p.ID}},
			"stringData": data}); err != nil {
			return err
		}
	} else if err := secrets.Delete(ctx, SecretEnvName(p.Slug), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Secret %s/%s: %w", ns, SecretEnvName(p.Slug), err)
	}
	bound, err := s.data.ApplyBindingsSecret(ctx, c, r, p)
	if err != nil {
		return err
	}
	if err := applyQueueSecret(ctx, c, r, p); err != nil {
		return err
	}
	if err := s.applyProjectWorkload(ctx, jc, c, r, p, bound); err != nil {
		return err
	}
	jc.Logf("Project %s runs %s on region %s", p.Slug, p.Image, r.Name)
	return nil
}

func (s *Service) registerProjectKinds() {
	load := func(ctx context.Context, jc *engine.JobContext) (*store.Project, *store.Region, *kube.Cluster, error) {
		var pp ProjectParams
		if err := jc.Params(&pp); err != nil {
			return nil, nil, nil, err
		}
		p, err := s.Store.ProjectByID(ctx, pp.ProjectID)
		if err != nil {
			return nil, nil, nil, err
		}
		if p.Region() == "" {
			return p, nil, nil, errors.New("the project has no region")
		}
		r, err := s.Store.RegionByID(ctx, p.Region())
		if err != nil {
			return p, nil, nil, err
		}
		c, err := s.RegionCluster(r)
		return p, r, c, err
	}
	s.Engine.Register(&engine.Kind{Name: KindDeployProject, Plan: func(jc *engine.JobContext) ([]engine.Step, error) {
		var pp ProjectParams
		if err := jc.Params(&pp); err != nil {
			return nil, err
		}
		return []engine.Step{
			{Name: "checks", Title: "Deploy checks", Run: s.projectChecks(load, pp)},
			{Name: "deploy", Title: "Deploy the Knative Service", Run: s.projectDeploy(load)},
		}, nil
	}, Finished: func(ctx context.Context, jc *engine.JobContext, err error) {
		var pp ProjectParams
		if err != nil && jc.Params(&pp) == nil {
			if p, perr := s.Store.ProjectByID(ctx, pp.ProjectID); perr == nil {
				_ = s.Store.SetProjectState(ctx, p.ID, p.State, "deploy refused or failed: "+err.Error(), "")
			}
		}
	}})
	s.Engine.Register(&engine.Kind{Name: KindStopProject, Plan: func(jc *engine.JobContext) ([]engine.Step, error) {
		return []engine.Step{{Name: "stop", Title: "Stop the project", Run: s.projectStop(load)}}, nil
	}})
	s.Engine.Register(&engine.Kind{Name: KindDeleteProject, Plan: func(jc *engine.JobContext) ([]engine.Step, error) {
		return []engine.Step{{Name: "delete", Title: "Delete the project", Run: s.projectDelete(load)}}, nil
	}})
	s.Engine.Register(&engine.Kind{Name: KindMoveProject, Plan: func(jc *engine.JobContext) ([]engine.Step, error) {
		var pp ProjectParams
		if err := jc.Params(&pp); err != nil {
			return nil, err
		}
		return []engine.Step{
			{Name: "deploy", Title: "Deploy on the new region", Run: s.projectDeployX(load)},
			{Name: "remove", Title: "Remove it from the old region", Run: s.projectRemove(pp)},
		}, nil
	}})
}

// projectChecks is the step "checks" (Deploy checks) of registerProjectKinds.
func (s *Service) projectChecks(load func(ctx context.Context, jc *engine.JobContext) (*store.Project, *store.Region, *kube.Cluster, error), pp ProjectParams) func(ctx context.Context, jc *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		p, r, _, err := load(ctx, jc)
		if err != nil {
			return err
		}
		if err := s.DeployCheck(ctx, r, p, pp.Resume); err != nil {
			return err
		}
		jc.Note("%s fits region %s", p.Slug, r.Name)
		return nil
	}
}

// projectDeploy is the step "deploy" (Deploy the Knative Service) of registerProjectKinds.
func (s *Service) projectDeploy(load func(ctx context.Context, jc *engine.JobContext) (*store.Project, *store.Region, *kube.Cluster, error)) func(ctx context.Context, jc *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		p, r, c, err := load(ctx, jc)
		if err != nil {
			return err
		}
		if err := s.Deploy(ctx, jc, c, r, p); err != nil {
			return err
		}
		return s.Store.SetProjectState(ctx, p.ID, store.ProjectRunning, "", p.Image)
	}
}

// projectStop is the step "stop" (Stop the project) of registerProjectKinds.
func (s *Service) projectStop(load func(ctx context.Context, jc *engine.JobContext) (*store.Project, *store.Region, *kube.Cluster, error)) func(ctx context.Context, jc *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		p, r, c, err := load(ctx, jc)
		if err != nil {
			return err
		}
		if err := undeployProject(ctx, c, r.Name, p); err != nil {
			return err
		}
		jc.Note("%s is stopped; nothing of it runs on region %s", p.Slug, r.Name)
		return s.Store.SetProjectState(ctx, p.ID, store.ProjectStopped, "", "")
	}
}

// projectDelete is the step "delete" (Delete the project) of registerProjectKinds.
func (s *Service) projectDelete(load func(ctx context.Context, jc *engine.JobContext) (*store.Project, *store.Region, *kube.Cluster, error)) func(ctx context.Context, jc *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		var pp ProjectParams
		if err := jc.Params(&pp); err != nil {
			return err
		}
		p, r, c, err := load(ctx, jc)
		if errors.Is(err, store.ErrNotFound) && p == nil {
			jc.Note("The project is gone already")
			return nil
		}
		if err == nil {
			if err := undeployProject(ctx, c, r.Name, p); err != nil {
				return err
			}
			if err := s.data.UnbindAll(ctx, jc, c, r, p); err != nil {
				return err
			}
		} else if p == nil {
			return err
		}
		jc.Note("Deleted project %s", p.Slug)
		return s.Store.DeleteProject(ctx, p.ID)
	}
}

// projectDeployX is the step "deploy" (Deploy on the new region) of registerProjectKinds.
func (s *Service) projectDeployX(load func(ctx context.Context, jc *engine.JobContext) (*store.Project, *store.Region, *kube.Cluster, error)) func(ctx context.Context, jc *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		p, r, c, err := load(ctx, jc)
		if err != nil {
			return err
		}
		if err := s.DeployCheck(ctx, r, p, false); err != nil {
			return err
		}
		if err := s.Deploy(ctx, jc, c, r, p); err != nil {
			return err
		}
		return s.Store.SetProjectState(ctx, p.ID, store.ProjectRunning, "", p.Image)
	}
}

// projectRemove is the step "remove" (Remove it from the old region) of registerProjectKinds.
func (s *Service) projectRemove(pp ProjectParams) func(ctx context.Context, jc *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		p, err := s.Store.ProjectByID(ctx, pp.ProjectID)
		if err != nil {
			return err
		}
		old, err := s.Store.RegionByID(ctx, pp.From)
		if err != nil {
			jc.Note("The old region is gone: nothing to remove")
			return engine.ErrSkip
		}
		c, err := s.RegionCluster(old)
		if err != nil {
			return err
		}
		if err := undeployProject(ctx, c, old.Name, p); err != nil {
			return err
		}
		jc.Note("%s no longer runs on %s", p.Slug, old.Name)
		return nil
	}
}

// ProjectInput is the body of POST /api/projects and PUT /api/projects/{id}: only the
// keys sent change.
type ProjectInput struct {
	Name          *string            `json:"name"`
	RegionID      *string            `json:"region_id"`
	Image         *string            `json:"image"`
	EnvVars       *map[string]string `json:"env_vars"`
	SecretEnvVars *map[string]string `json:"secret_env_vars"`
	CPUm          *int               `json:"cpu_m"`
	MemoryMi      *int               `json:"memory_mi"`
	AlwaysOn      *bool              `json:"always_on"`
	GPU           *store.ProjectGPU  `json:"gpu"`
	// DataLocation is the data location the project requires ("" for none).
	DataLocation *string `json:"data_location"`
	// Kind is chosen when the project is created (http unless sent).
	Kind *store.ProjectKind `json:"kind"`
	// Schedule is a scheduled job's cron schedule.
	Schedule *string `json:"schedule"`
	// QueueStream is the Redis stream a queue worker consumes (or another kind publishes to).
	QueueStream *string `json:"queue_stream"`
	// Command replaces the image's entrypoint ([] for the image's own).
	Command *[]string `json:"command"`
	// Config is the shape of PUT /api/projects/{id} in upgrading.md: {"config": {"env_vars": …, "secret_env_vars": …}}.
	Config *struct {
		EnvVars       *map[string]string `json:"env_vars"`
		SecretEnvVars *map[string]string `json:"secret_env_vars"`
	} `json:"config"`
}

// CreateProject records a new project (100 millicores and 128 MiB unless given); it is
// deployed by ProjectAction.
func (s *Service) CreateProject(ctx context.Context, actor kit.Actor, in ProjectInput) (*store.Project, error) {
	p := &store.Project{CPUm: 100, MemoryMi: 128}
	if err := s.applyProjectInput(ctx, actor, p, in, true); err != nil {
		return nil, err
	}
	loc := p.DataLocation
	if err := s.Store.CreateProject(ctx, p); err != nil {
		return nil, fmt.Errorf("create project %s: %w", p.Name, err)
	}
	if p.DataLocation = loc; loc != "" {
		if err := s.saveProjectResidency(ctx, p); err != nil {
			return nil, err
		}
	}
	s.Log.Info("project created", "project", p.Slug, "user", actor.Email)
	return p, nil
}

// UpdateProject saves the keys sent (p changes only when they are valid); a running
// project that changes region moves (the job of the move, else nil).
func (s *Service) UpdateProject(ctx context.Context, actor kit.Actor, p *store.Project, in ProjectInput) (*store.Job, error) {
	from := p.Region()
	next := *p
	if err := s.applyProjectInput(ctx, actor, &next, in, false); err != nil {
		return nil, err
	}
	if next.Region() != from {
		if err := s.data.BoundElsewhere(ctx, p); err != nil {
			return nil, err
		}
		if err := s.movableTo(ctx, &next); err != nil {
			return nil, err
		}
	}
	*p = next
	if err := s.Store.UpdateProject(ctx, p); err != nil {
		return nil, fmt.Errorf("update project %s: %w", p.Slug, err)
	}
	if err := s.saveProjectResidency(ctx, p); err != nil {
		return nil, err
	}
	if p.Region() != from && p.State == store.ProjectRunning {
		return s.enqueueProject(ctx, actor, p, KindMoveProject, "Move", ProjectParams{From: from})
	}
	return nil, nil
}

// notActiveRefusal says why a region takes no deploy ("" when it does): one that is not
// active keeps running its projects behind its status block, and takes none until it is
// active again.
func notActiveRefusal(r *store.Region) string {
	if r.Status == store.RegionActive {
		return ""
	}
	return "Region " + r.Name + " is " + string(r.Status) + ": it takes no deploy until it is active again (its running projects keep running)."
}

// movableTo refuses to move a running project into a region that is not active: the move
// deploys it there.
func (s *Service) movableTo(ctx context.Context, p *store.Project) error {
	if p.State != store.ProjectRunning || p.Region() == "" {
		return nil
	}
	r, err := s.Store.RegionByID(ctx, p.Region())
	if err != nil {
		return fmt.Errorf("region of project %s: %w", p.Slug, err)
	}
	if why := notActiveRefusal(r); why != "" {
		return &problem.Refused{Field: "region_id", Reason: why}
	}
	return nil
}

// ProjectAction queues deploy, stop, resume or delete (action) of a project, after the
// checks that need no cluster; a project without a region is deleted at once (no job).
func (s *Service) ProjectAction(ctx context.Context, actor kit.Actor, p *store.Project, action string) (*store.Job, error) {
	if p.Region() == "" && action != "delete" {
		return nil, &problem.Refused{Reason: "The project has no region: choose one first."}
	}
	var lacks error // what the region lacks for the project's kind, after the state's refusals
	switch action {
	case "deploy", "resume":
		r, err := s.Store.RegionByID(ctx, p.Region())
		if errors.Is(err, store.ErrNotFound) {
			// A platform region no longer assigned to the project's tenant.
			return nil, &problem.Refused{Field: "region_id", Reason: "The project's region is no longer available to it: choose another region."}
		}
		if err != nil {
			return nil, fmt.Errorf("region of project %s: %w", p.Slug, err)
		}
		if why := notActiveRefusal(r); why != "" {
			return nil, &problem.Refused{Reason: why}
		}
		if why := isolation.WorkloadClassRefusal(r, ProjectWorkloadKind(p)); why != "" {
			return nil, &problem.Refused{Reason: why}
		}
		if why := gpu.GPURefusal(r, p); why != "" {
			return nil, &problem.Refused{Reason: why}
		}
		if why := kit.ResidencyRefusal(r, p); why != "" {
			return nil, &problem.Refused{Field: "data_location", Reason: "Data residency: " + why + "."}
		}
		if why := kindPrerequisites(r, p); why != "" {
			lacks = &problem.Refused{Reason: why}
		}
		if err := s.billing.Admit(ctx, r, p); err != nil {
			return nil, err
		}
	}
	switch action {
	case "deploy":
		if p.State == store.ProjectStopped {
			return nil, &problem.Refused{Reason: ErrProjectStopped.Error()}
		}
		if lacks != nil {
			return nil, lacks
		}
		return s.enqueueProject(ctx, actor, p, KindDeployProject, "Deploy", ProjectParams{})
	case "resume":
		if p.State != store.ProjectStopped {
			return nil, &problem.Refused{Reason: "Only a stopped project resumes; this one is " + string(p.State) + "."}
		}
		if lacks != nil {
			return nil, lacks
		}
		return s.enqueueProject(ctx, actor, p, KindDeployProject, "Resume", ProjectParams{Resume: true})
	case "stop":
		if p.State != store.ProjectRunning {
			return nil, &problem.Refused{Reason: "Only a running project stops; this one is " + string(p.State) + "."}
		}
		return s.enqueueProject(ctx, actor, p, KindStopProject, "Stop", ProjectParams{})
	case "delete":
		if p.Region() == "" {
			if err := s.Store.DeleteProject(ctx, p.ID); err != nil {
				return nil, fmt.Errorf("delete project %s: %w", p.Slug, err)
			}
			return nil, nil
		}
		return s.enqueueProject(ctx, actor, p, KindDeleteProject, "Delete", ProjectParams{})
	}
	return nil, fmt.Errorf("project action %q: %w", action, store.ErrNotFound)
}

// enqueueProject queues a job of a project on its region.
func (s *Service) enqueueProject(ctx context.Context, actor kit.Actor, p *store.Project, kind, title string, params ProjectParams) (*store.Job, error) {
	params.ProjectID = p.ID
	return s.Enqueue(ctx, engine.Request{Kind: kind, Title: title + " " + p.Slug, Subject: p.Region(), Params: params, CreatedBy: actor.Email})
}

// applyProjectInput validates the keys sent and applies them to p; creating asks for
// the name, the region and the image.
func (s *Service) applyProjectInput(ctx context.Context, actor kit.Actor, p *store.Project, in ProjectInput, creating bool) error {
	errs := map[string]string{}
	if in.Name != nil {
		p.Name = strings.TrimSpace(*in.Name)
	}
	if creating && p.Name == "" || len(p.Name) > 100 {
		errs["name"] = "Give the project a name of up to 100 characters."
	}
	s.applyProjectRegion(ctx, actor, p, in.RegionID, errs)
	if creating && p.RegionID == nil {
		errs["region_id"] = "Choose the region the project runs in."
	}
	if in.Image != nil {
		p.Image = strings.TrimSpace(*in.Image)
		if strings.ContainsAny(p.Image, " \t\n") {
			errs["image"] = "An image reference has no spaces, e.g. ghcr.io/acme/shop:1.2."
		}
	}
	if creating && p.Image == "" {
		errs["image"] = "Give the image to run, e.g. ghcr.io/acme/shop:1.2."
	}
	applyProjectEnv(p, in, errs)
	if in.CPUm != nil {
		if *in.CPUm < 10 || *in.CPUm > 64000 {
			errs["cpu_m"] = "Use 10 to 64000 millicores."
		}
		p.CPUm = *in.CPUm
	}
	if in.MemoryMi != nil {
		if *in.MemoryMi < 16 || *in.MemoryMi > 262144 {
			errs["memory_mi"] = "Use 16 to 262144 MiB."
		}
		p.MemoryMi = *in.MemoryMi
	}
	if in.AlwaysOn != nil {
		p.AlwaysOn = *in.AlwaysOn
	}
	gpu.ApplyProjectGPU(p, in.GPU, errs)
	s.applyProjectResidency(ctx, p, in.DataLocation, errs)
	applyProjectKind(p, in, creating, errs)
	return problem.FromFields(errs)
}

// applyProjectRegion sets the project's region when one is sent ("" for none); a region
// that cannot be read is a field error, and so is a tenant's own region for a platform
// user (it belongs to that tenant only).
func (s *Service) applyProjectRegion(ctx context.Context, actor kit.Actor, p *store.Project, id *string, errs map[string]string) {
	switch {
	case id == nil:
	case *id == "":
		p.RegionID = nil
	default:
		if r, err := s.Store.RegionByID(ctx, *id); err != nil || actor.Platform() && r.Tenant() != "" {
			errs["region_id"] = "No such region."
		} else {
			p.RegionID = store.Ptr(*id)
		}
	}
}

// applyProjectEnv sets the plain and secret env vars sent (also under "config"): names
// of letters, digits and _, and no name both plain and secret.
func applyProjectEnv(p *store.Project, in ProjectInput, errs map[string]string) {
	if in.Config != nil {
		if in.Config.EnvVars != nil {
			in.EnvVars = in.Config.EnvVars
		}
		if in.Config.SecretEnvVars != nil {
			in.SecretEnvVars = in.Config.SecretEnvVars
		}
	}
	check := func(field string, m map[string]string) {
		for k := range m {
			if !envNameOK(k) {
				errs[field] = "Not a valid variable name: " + k + " (letters, digits and _)."
			}
		}
	}
	if in.EnvVars != nil {
		check("env_vars", *in.EnvVars)
		p.EnvVars.V = *in.EnvVars
	}
	if in.SecretEnvVars != nil {
		check("secret_env_vars", *in.SecretEnvVars)
		p.Secrets = *in.SecretEnvVars
	}
	for k := range p.Secrets {
		if _, dup := p.EnvVars.V[k]; dup {
			errs["secret_env_vars"] = k + " is both a plain and a secret variable: keep one."
		}
	}
}

// envNameOK reports whether k is a valid environment variable name.
func envNameOK(k string) bool {
	if k == "" || len(k) > 128 {
		return false
	}
	for i, ch := range k {
		if !(ch == '_' || ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || i > 0 && ch >= '0' && ch <= '9') {
			return false
		}
	}
	return true
}
