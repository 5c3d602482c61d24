package data

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"runr.dev/console/crypt"
	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// A binding gives one project its own part of a data service of its region: a Redis user
// limited to its key prefix, a bucket with an access key limited to it, or a database with
// its role. Its connection settings are sealed in the console's database and reach the
// project as secret env: the Secret <project>-bindings in the project namespace, read
// through secretKeyRef, never inline and never in an API answer.

// BindingsSecretName is the Secret of a project's binding settings in its namespace.
func BindingsSecretName(slug string) string { return slug + "-bindings" }

// bindingSecretName is a binding's Secret in runr-data, which its Jobs and CloudNativePG read.
func bindingSecretName(b *store.Binding) string {
	return "runr-bind-" + b.Service + "-" + b.ProjectSlug
}

// bindingObjectName names a binding's DatabaseRole and Database.
func bindingObjectName(b *store.Binding) string { return "runr-" + b.ProjectSlug }

// bindingJobName names a binding's Jobs (set, drop), within 63 characters.
func bindingJobName(b *store.Binding, verb string) string {
	name := "runr-" + b.Service + "-" + verb + "-" + b.ProjectSlug
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	return name
}

// randomSecret is a new password of 43 URL-safe characters.
func randomSecret() string { return crypt.RandomToken("") }

// bindingSecret writes a binding's settings into its Secret in runr-data.
func (s *Service) bindingSecret(ctx context.Context, c *kube.Cluster, b *store.Binding) error {
	return applySecret(ctx, c, DataNamespace, bindingSecretName(b), map[string]string{"runr.dev/project": b.ProjectID}, b.Credentials)
}

// BindInput is the body of POST /api/projects/{id}/bindings.
type BindInput struct {
	Service string `json:"service"`
}

// BindingParams name the binding of a job.
type BindingParams struct {
	BindingID string `json:"binding_id"`
}

// Bind binds a project to a data service of its own region: it records the binding with
// new credentials and queues the job that creates its part of the service (and deploys a
// running project again with the settings).
func (s *Service) Bind(ctx context.Context, actor kit.Actor, p *store.Project, in BindInput) (*store.Binding, *store.Job, error) {
	if !slices.Contains(store.DataServiceNames, in.Service) {
		return nil, nil, &problem.Invalid{Fields: map[string]string{"service": "Choose kv, object or postgres."}}
	}
	r, err := s.bindRegion(ctx, p, in.Service)
	if err != nil {
		return nil, nil, err
	}
	b := &store.Binding{ProjectID: p.ID, RegionID: store.Ptr(r.ID), Service: in.Service, ProjectSlug: p.Slug, ProjectName: p.Name}
	switch in.Service {
	case store.DataKV:
		b.Resource, b.Credentials = kvCredentials(r, p)
	case store.DataObject:
		b.Resource, b.Credentials = objectCredentials(r, p)
	case store.DataPostgres:
		b.Resource, b.Credentials = postgresCredentials(p)
	}
	if in.Service == store.DataObject && len(b.Resource) > 63 {
		return nil, nil, &problem.Refused{Field: "service", Reason: fmt.Sprintf("The bucket %s would be longer than S3's 63 characters: use a shorter bucket prefix for the object store, or a shorter project slug.", b.Resource)}
	}
	if taken := envTaken(p, b.Credentials); len(taken) > 0 {
		return nil, nil, &problem.Refused{Field: "service", Reason: fmt.Sprintf("%s defines %s itself, which the %s binding sets: rename its variables first.", p.Slug, strings.Join(taken, ", "), in.Service)}
	}
	if err := s.Store.CreateBinding(ctx, b); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, nil, &problem.Refused{Field: "service", Reason: p.Slug + " is bound to " + in.Service + " already."}
		}
		return nil, nil, fmt.Errorf("bind %s to %s: %w", p.Slug, in.Service, err)
	}
	j, err := s.Enqueue(ctx, engine.Request{Kind: KindBind, Title: "Bind " + p.Slug + " to " + in.Service + " of " + r.Name,
		Subject: r.ID, Params: BindingParams{BindingID: b.ID}, CreatedBy: actor.Email})
	if err != nil {
		s.Record(s.Store.DeleteBinding(ctx, b.ID))
		return nil, nil, err
	}
	s.Log.Info("project bound", "project", p.Slug, "service", in.Service, "region", r.Name, "user", actor.Email)
	return b, j, nil
}

// bindRegion is the project's region when it can be bound to the service: the project has
// a region, it is not bound to the service yet, and the region runs the service.
func (s *Service) bindRegion(ctx context.Context, p *store.Project, service string) (*store.Region, error) {
	if p.Region() == "" {
		return nil, &problem.Refused{Reason: p.Slug + " has no region: a project binds the data services of its own region."}
	}
	if _, err := s.Store.ProjectBinding(ctx, p.ID, service); err == nil {
		return nil, &problem.Refused{Field: "service", Reason: p.Slug + " is bound to " + service + " already."}
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	r, err := s.Store.RegionByID(ctx, p.Region())
	if err != nil {
		return nil, fmt.Errorf("region of project %s: %w", p.Slug, err)
	}
	if d := r.DataServices.V.Service(service); !d.Ready() {
		return nil, &problem.Refused{Field: "service", Reason: fmt.Sprintf("Region %s has no %s service ready (%s): install it in its Data services tab first.", r.Name, service, d.State())}
	}
	return r, nil
}

// envTaken lists the binding's variable names the project defines itself.
func envTaken(p *store.Project, creds map[string]string) []string {
	var out []string
	for _, k := range kit.SortedKeys(creds) {
		if _, plain := p.EnvVars.V[k]; plain {
			out = append(out, k)
		} else if _, secret := p.Secrets[k]; secret {
			out = append(out, k)
		}
	}
	return out
}

// Unbind queues the removal of a project's binding: the project is deployed again
// without its settings, then its part of the service is deleted with its data. A binding
// whose region was removed is forgotten at once (no job).
func (s *Service) Unbind(ctx context.Context, actor kit.Actor, p *store.Project, service string) (*store.Job, error) {
	b, err := s.Store.ProjectBinding(ctx, p.ID, service)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &problem.Missing{Reason: p.Slug + " is not bound to " + service + "."}
	}
	if err != nil {
		return nil, err
	}
	if b.Region() == "" {
		if err := s.Store.DeleteBinding(ctx, b.ID); err != nil {
			return nil, fmt.Errorf("unbind %s from %s: %w", p.Slug, service, err)
		}
		return nil, nil
	}
	if b.Status == store.ComponentRemoving || b.Status == store.ComponentInstalling {
		return nil, &problem.Refused{Reason: "The binding of " + p.Slug + " to " + service + " is " + string(b.Status) + ": wait for that job to finish."}
	}
	if err := s.Store.SetBindingStatus(ctx, b.ID, store.ComponentRemoving, ""); err != nil {
		return nil, err
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindUnbind, Title: "Unbind " + p.Slug + " from " + service,
		Subject: b.Region(), Params: BindingParams{BindingID: b.ID}, CreatedBy: actor.Email})
}

// bindingStep is a step of a binding's job, with the binding, its project, its region
// and the region's cluster.
func (s *Service) bindingStep(name, title string, pp BindingParams, run func(ctx context.Context, jc *engine.JobContext, b *store.Binding, r *store.Region, c *kube.Cluster) error) engine.Step {
	return s.RegionStep(name, title, func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		b, err := s.Store.BindingByID(ctx, pp.BindingID)
		if errors.Is(err, store.ErrNotFound) {
			jc.Note("The binding is gone already")
			return engine.ErrSkip
		}
		if err != nil {
			return err
		}
		if b.SecretError != "" {
			return fmt.Errorf("binding of %s to %s: %s", b.ProjectSlug, b.Service, b.SecretError)
		}
		return run(ctx, jc, b, r, c)
	})
}

func (s *Service) registerBindingKinds() {
	failed := func(ctx context.Context, jc *engine.JobContext, err error) {
		var pp BindingParams
		if err != nil && jc.Params(&pp) == nil {
			if serr := s.Store.SetBindingStatus(ctx, pp.BindingID, store.ComponentError, err.Error()); serr != nil && !errors.Is(serr, store.ErrNotFound) {
				s.Record(serr)
			}
		}
	}
	s.Engine.Register(&engine.Kind{Name: KindBind, Finished: failed, Plan: engine.PlanWith(s.bindSteps)})
	s.Engine.Register(&engine.Kind{Name: KindUnbind, Finished: failed, Plan: engine.PlanWith(s.unbindSteps)})
}

func (s *Service) bindSteps(pp BindingParams) []engine.Step {
	return []engine.Step{
		s.bindingStep("service", "Create the binding's part of the service", pp, s.BindService),
		s.bindingStep("project", "Give the project its settings", pp, func(ctx context.Context, jc *engine.JobContext, b *store.Binding, r *store.Region, c *kube.Cluster) error {
			if err := s.Store.SetBindingStatus(ctx, b.ID, store.ComponentReady, ""); err != nil {
				return err
			}
			return s.redeployBound(ctx, jc, c, r, b, "gets "+strings.Join(b.CredentialNames(), ", ")+" as secret env")
		}),
	}
}

func (s *Service) unbindSteps(pp BindingParams) []engine.Step {
	return []engine.Step{
		s.bindingStep("project", "Deploy the project without the binding", pp, func(ctx context.Context, jc *engine.JobContext, b *store.Binding, r *store.Region, c *kube.Cluster) error {
			if err := s.Store.SetBindingStatus(ctx, b.ID, store.ComponentRemoving, ""); err != nil {
				return err
			}
			return s.redeployBound(ctx, jc, c, r, b, "no longer gets the "+b.Service+" settings")
		}),
		s.bindingStep("service", "Delete the binding's part of the service and its data", pp, s.unbindService),
		s.bindingStep("record", "Forget the binding", pp, func(ctx context.Context, jc *engine.JobContext, b *store.Binding, r *store.Region, c *kube.Cluster) error {
			jc.Note("%s is no longer bound to %s", b.ProjectSlug, b.Service)
			return s.Store.DeleteBinding(ctx, b.ID)
		}),
	}
}

// BindService creates the binding's part of its service.
func (s *Service) BindService(ctx context.Context, jc *engine.JobContext, b *store.Binding, r *store.Region, c *kube.Cluster) error {
	if _, err := kit.EnsureNamespace(ctx, jc, c, DataNamespace, nil); err != nil {
		return err
	}
	switch b.Service {
	case store.DataKV:
		return s.kvBind(ctx, jc, c, r, b)
	case store.DataObject:
		return s.objectBind(ctx, jc, c, r, b)
	case store.DataPostgres:
		return s.postgresBind(ctx, jc, c, r, b)
	}
	return fmt.Errorf("unknown data service %q", b.Service)
}

// unbindService deletes the binding's part of its service, with its data.
func (s *Service) unbindService(ctx context.Context, jc *engine.JobContext, b *store.Binding, r *store.Region, c *kube.Cluster) error {
	switch b.Service {
	case store.DataKV:
		return s.kvUnbind(ctx, jc, c, r, b)
	case store.DataObject:
		return s.objectUnbind(ctx, jc, c, r, b)
	case store.DataPostgres:
		return s.postgresUnbind(ctx, jc, c, r, b)
	}
	return fmt.Errorf("unknown data service %q", b.Service)
}

// redeployBound deploys the binding's project again when it runs on the region, so that
// its Knative Service gets (or loses) the binding's settings.
func (s *Service) redeployBound(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region, b *store.Binding, what string) error {
	p, err := s.Store.ProjectByID(ctx, b.ProjectID)
	if err != nil {
		return err
	}
	if p.State != store.ProjectRunning || p.Region() != r.ID {
		jc.Note("%s does not run: it %s when it is deployed", p.Slug, what)
		return nil
	}
	if err := s.deployProject(ctx, jc, c, r, p); err != nil {
		return err
	}
	jc.Note("%s %s", p.Slug, what)
	return nil
}

// UnbindAll deletes every binding of a project being deleted, with its data.
func (s *Service) UnbindAll(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region, p *store.Project) error {
	bs, err := s.Store.ProjectBindings(ctx, p.ID)
	if err != nil {
		return err
	}
	for i := range bs {
		b := &bs[i]
		if b.Region() == r.ID && b.SecretError == "" {
			if err := s.unbindService(ctx, jc, b, r, c); err != nil {
				return fmt.Errorf("unbind %s from %s: %w", p.Slug, b.Service, err)
			}
		}
		if err := s.Store.DeleteBinding(ctx, b.ID); err != nil {
			return err
		}
	}
	return nil
}

// readyBindings are the bindings of a project to its region's services that are ready:
// the settings its Knative Service gets.
func (s *Service) readyBindings(ctx context.Context, r *store.Region, p *store.Project) (map[string]string, error) {
	bs, err := s.Store.ProjectBindings(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, b := range bs {
		if b.Status == store.ComponentReady && b.Region() == r.ID {
			for k, v := range b.Credentials {
				env[k] = v
			}
		}
	}
	return env, nil
}

// ApplyBindingsSecret writes the settings of the project's ready bindings into its
// Secret <project>-bindings (deleted when it has none) and returns their names.
func (s *Service) ApplyBindingsSecret(ctx context.Context, c *kube.Cluster, r *store.Region, p *store.Project) ([]string, error) {
	env, err := s.readyBindings(ctx, r, p)
	if err != nil {
		return nil, err
	}
	if len(env) == 0 {
		return nil, kit.DeleteSecret(ctx, c, r.Name, BindingsSecretName(p.Slug))
	}
	if err := applySecret(ctx, c, r.Name, BindingsSecretName(p.Slug), map[string]string{"runr.dev/project": p.ID}, env); err != nil {
		return nil, err
	}
	return kit.SortedKeys(env), nil
}

// BindingEnv is the env of a project's binding settings, each through secretKeyRef.
func BindingEnv(slug string, names []string) []any {
	out := make([]any, 0, len(names))
	for _, k := range names {
		out = append(out, map[string]any{"name": k, "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": BindingsSecretName(slug), "key": k}}})
	}
	return out
}

// BoundElsewhere refuses a project's move to another region while it is bound to the
// data services of its region (they do not follow it), naming them.
func (s *Service) BoundElsewhere(ctx context.Context, p *store.Project) error {
	bs, err := s.Store.ProjectBindings(ctx, p.ID)
	if err != nil {
		return err
	}
	var names []string
	for _, b := range bs {
		if b.Region() != "" {
			names = append(names, b.Service)
		}
	}
	if len(names) > 0 {
		return &problem.Refused{Field: "region_id", Reason: p.Slug + " is bound to " + strings.Join(names, ", ") + " of its region: a project binds the services of its own region, so unbind them before it moves."}
	}
	return nil
}
