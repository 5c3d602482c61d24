package data

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/engine"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// ServiceInput is the body of POST /api/knative-regions/{id}/data-services/{service}:
// the volume of the object store or PostgreSQL ("" the cluster's default StorageClass,
// 0 the default size). KV has no volume of its own. The object store is managed, or
// (mode "external") an S3 endpoint with an IAM API and an administrator's key.
type ServiceInput struct {
	StorageClass string `json:"storage_class"`
	SizeGi       int    `json:"size_gi"`
	Mode         string `json:"mode"`
	ExternalObjectStore
}

// ExternalObjectStore is an S3 endpoint the administrator gives as the object store,
// with the secret key of its administrator's access key.
type ExternalObjectStore struct {
	ExternalEndpoint
	SecretAccessKey string `json:"secret_access_key"`
}

// dataService checks a data service's name (404 for another).
func dataService(name string) error {
	if !slices.Contains(store.DataServiceNames, name) {
		return &problem.Missing{Reason: "No data service " + name + ": kv, object or postgres."}
	}
	return nil
}

// dataBusy refuses a second install or removal while one runs on the region.
func (s *Service) dataBusy(ctx context.Context, r *store.Region) error {
	b, err := s.Busy(ctx, r.ID, KindDataInstall, KindDataRemove)
	if err != nil {
		return err
	}
	if b {
		return &problem.Refused{Reason: "A data service of this region is being installed or removed; wait for that job to finish."}
	}
	return nil
}

// InstallDataService queues the install of a data service in runr-data: KV on the
// region's Redis, the managed object store, or CloudNativePG with a PostgreSQL cluster.
func (s *Service) InstallDataService(ctx context.Context, actor kit.Actor, r *store.Region, service string, in ServiceInput) (*store.Job, error) {
	if err := dataService(service); err != nil {
		return nil, err
	}
	if d := r.DataServices.V.Service(service); d.State() == store.ComponentReady || d.State() == store.ComponentRemoving {
		return nil, &problem.Refused{Reason: fmt.Sprintf("%s is %s on region %s.", service, d.State(), r.Name)}
	}
	if owner, err := s.serviceOwner(ctx, r, service); err != nil {
		return nil, err
	} else if owner != "" {
		return nil, &problem.Refused{Reason: fmt.Sprintf("This cluster's %s data service (namespace %s) is region %s's: a cluster holds one of each, and a second install would change %s's. Remove it from %s first, or use a region on another cluster.", service, DataNamespace, owner, owner, owner)}
	}
	p := Params{Service: service}
	switch {
	case service == store.DataKV:
		if r.RedisStatus != store.ComponentReady || r.RedisAddress == "" {
			return nil, &problem.Refused{Reason: "KV runs on the region's Redis, which is not ready (" + string(r.RedisStatus) + "): set up Redis in the Redis tab first."}
		}
	case service == store.DataObject && in.Mode == store.ObjectExternal:
		ext, err := in.ExternalObjectStore.validate()
		if err != nil {
			return nil, err
		}
		p.Mode, p.External = store.ObjectExternal, &ext
	case service == store.DataObject && in.Mode != "" && in.Mode != store.ObjectManaged:
		return nil, &problem.Invalid{Fields: map[string]string{"mode": "Choose managed or external."}}
	default:
		var err error
		if p.StorageClass, p.SizeGi, err = s.dataVolume(ctx, r, in); err != nil {
			return nil, err
		}
	}
	if err := s.dataBusy(ctx, r); err != nil {
		return nil, err
	}
	if p.External != nil {
		// The key is sealed in the region, never in the job's parameters.
		if err := s.Store.SetObjectSecretKey(ctx, r.ID, in.SecretAccessKey); err != nil {
			return nil, err
		}
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindDataInstall, Title: "Install " + service + " on " + r.Name,
		Subject: r.ID, Params: p, CreatedBy: actor.Email})
}

// serviceOwner names another region on r's cluster that has service (installed, or
// being installed or removed), or "": the data services live in one namespace of the
// cluster, DataNamespace, under fixed names.
func (s *Service) serviceOwner(ctx context.Context, r *store.Region, service string) (string, error) {
	rs, err := s.OtherRegionsOnCluster(ctx, r)
	if err != nil {
		return "", err
	}
	for _, x := range rs {
		if x.DataServices.V.Service(service).State() != store.ComponentNotInstalled {
			return x.Name, nil
		}
	}
	return "", nil
}

// dataVolume checks the volume of a data service: a size of 1 to 10240 GiB (10 unless
// given) and a StorageClass the cluster has.
func (s *Service) dataVolume(ctx context.Context, r *store.Region, in ServiceInput) (string, int, error) {
	sc, size := strings.TrimSpace(in.StorageClass), in.SizeGi
	if size == 0 {
		size = DefaultSizeGi
	}
	fields := map[string]string{}
	if size < 1 || size > 10240 {
		fields["size_gi"] = "Use 1 to 10240 GiB."
	}
	if sc != "" {
		c, err := s.RegionCluster(r)
		if err != nil {
			return "", 0, err
		}
		if _, err := c.Clientset.StorageV1().StorageClasses().Get(ctx, sc, metav1.GetOptions{}); err != nil {
			fields["storage_class"] = "The cluster has no StorageClass " + sc + "."
		}
	}
	return sc, size, problem.FromFields(fields)
}

// RemoveDataService queues the removal of a data service with its data (its volumes);
// it is refused (naming them) while bindings use it.
func (s *Service) RemoveDataService(ctx context.Context, actor kit.Actor, r *store.Region, service string) (*store.Job, error) {
	if err := dataService(service); err != nil {
		return nil, err
	}
	if r.DataServices.V.Service(service).State() == store.ComponentNotInstalled {
		return nil, &problem.Refused{Reason: service + " is not installed on region " + r.Name + "."}
	}
	bs, err := s.Store.RegionBindings(ctx, r.ID, service)
	if err != nil {
		return nil, err
	}
	if len(bs) > 0 {
		return nil, &problem.Refused{Reason: fmt.Sprintf("%s is bound by %s: unbind them first (removing %s deletes its data).", service, bindingProjects(bs), service)}
	}
	if err := s.dataBusy(ctx, r); err != nil {
		return nil, err
	}
	req := removeRequest(r, service)
	req.CreatedBy = actor.Email
	return s.Enqueue(ctx, req)
}

func removeRequest(r *store.Region, service string) engine.Request {
	return engine.Request{Kind: KindDataRemove, Title: "Remove " + service + " from " + r.Name,
		Subject: r.ID, Params: Params{Service: service, Mode: r.DataServices.V.Service(service).Mode}}
}

// TeardownParts are the removals of the data services installed on r, with their data,
// for the removal of a region with what the console installed (a region with projects,
// and so with bindings, is not removed).
func (s *Service) TeardownParts(ctx context.Context, r *store.Region) ([]engine.Part, error) {
	var parts []engine.Part
	for _, name := range store.DataServiceNames {
		if r.DataServices.V.Service(name).State() == store.ComponentNotInstalled {
			continue
		}
		p, err := engine.PartOf("Data service "+name, removeRequest(r, name))
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// ServiceView is one data service as the API and the tab show it: its state, where
// it answers, and its bindings (projects and resources; never their credentials).
type ServiceView struct {
	Name         string                `json:"name"`
	Status       store.ComponentStatus `json:"status"`
	Message      string                `json:"message,omitempty"`
	Mode         string                `json:"mode,omitempty"`
	StorageClass string                `json:"storage_class,omitempty"`
	SizeGi       int                   `json:"size_gi,omitempty"`
	Endpoint     string                `json:"endpoint,omitempty"`
	// IAMEndpoint, S3Region, AccessKeyID and BucketPrefix are an external object store's
	// (never its secret key).
	IAMEndpoint  string        `json:"iam_endpoint,omitempty"`
	S3Region     string        `json:"s3_region,omitempty"`
	AccessKeyID  string        `json:"access_key_id,omitempty"`
	BucketPrefix string        `json:"bucket_prefix,omitempty"`
	Bindings     []BindingView `json:"bindings"`
}

// BindingView is a binding without its credentials: the names of its settings only.
type BindingView struct {
	Service     string                `json:"service"`
	ProjectID   string                `json:"project_id"`
	ProjectSlug string                `json:"project_slug"`
	Resource    string                `json:"resource"`
	Status      store.ComponentStatus `json:"status"`
	Message     string                `json:"message,omitempty"`
	Env         []string              `json:"env"`
}

// ViewOfBinding is a binding as answers show it.
func ViewOfBinding(b *store.Binding) BindingView {
	return BindingView{Service: b.Service, ProjectID: b.ProjectID, ProjectSlug: b.ProjectSlug, Resource: b.Resource,
		Status: b.Status, Message: b.Message, Env: b.CredentialNames()}
}

// RegionDataServices is a region's data services with their bindings.
func (s *Service) RegionDataServices(ctx context.Context, r *store.Region) ([]ServiceView, error) {
	bs, err := s.Store.RegionBindings(ctx, r.ID, "")
	if err != nil {
		return nil, err
	}
	out := make([]ServiceView, 0, len(store.DataServiceNames))
	for _, name := range store.DataServiceNames {
		d := r.DataServices.V.Service(name)
		v := ServiceView{Name: name, Status: d.State(), Message: d.Message, Mode: d.Mode, StorageClass: d.StorageClass, SizeGi: d.SizeGi, Bindings: []BindingView{}}
		switch {
		case d.State() == store.ComponentNotInstalled:
		case name == store.DataKV:
			v.Endpoint = r.RedisAddress
		case name == store.DataObject && d.External():
			v.Endpoint, v.IAMEndpoint, v.S3Region, v.AccessKeyID, v.BucketPrefix = d.Endpoint, d.IAMEndpoint, d.S3Region, d.AccessKeyID, d.BucketPrefix
		case name == store.DataObject:
			v.Endpoint = ObjectEndpoint()
		case name == store.DataPostgres:
			v.Endpoint = fmt.Sprintf("%s:%d", PostgresHost(), postgresPort)
		}
		for i := range bs {
			if bs[i].Service == name {
				v.Bindings = append(v.Bindings, ViewOfBinding(&bs[i]))
			}
		}
		out = append(out, v)
	}
	return out, nil
}
