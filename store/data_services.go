package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

func init() {
	RegisterSecretColumn("bindings", "id", "credentials")
}

// Data services of a region, by the name the API uses.
const (
	DataKV       = "kv"
	DataObject   = "object"
	DataPostgres = "postgres"
)

// DataServiceNames lists the data services in the order the tab shows them.
var DataServiceNames = []string{DataKV, DataObject, DataPostgres}

// Modes of the object store: the one RunR installs in the region, or an external S3
// endpoint the administrator gives (nothing is installed).
const (
	ObjectManaged  = "managed"
	ObjectExternal = "external"
)

// DataService is one data service of a region: its install state and its settings.
type DataService struct {
	Status  ComponentStatus `json:"status,omitempty"`
	Message string          `json:"message,omitempty"`
	// Mode is the object store's: managed or external.
	Mode string `json:"mode,omitempty"`
	// Endpoint (S3), IAMEndpoint ("" the same), S3Region, AccessKeyID and BucketPrefix are
	// an external object store's; its secret key is the region's object_secret_key.
	Endpoint     string `json:"endpoint,omitempty"`
	IAMEndpoint  string `json:"iam_endpoint,omitempty"`
	S3Region     string `json:"s3_region,omitempty"`
	AccessKeyID  string `json:"access_key_id,omitempty"`
	BucketPrefix string `json:"bucket_prefix,omitempty"`
	// StorageClass ("" the cluster's default) and SizeGi are the volume of a managed
	// object store or PostgreSQL cluster.
	StorageClass string    `json:"storage_class,omitempty"`
	SizeGi       int       `json:"size_gi,omitempty"`
	UpdatedAt    time.Time `json:"updated_at,omitempty"`
}

// State is the service's status, not_installed when it has none yet.
func (d DataService) State() ComponentStatus {
	return d.Status.orNotInstalled()
}

// External reports an object store on an external S3 endpoint.
func (d DataService) External() bool { return d.Mode == ObjectExternal }

// Ready reports an installed service.
func (d DataService) Ready() bool { return d.Status == ComponentReady }

// DataServices are a region's data services.
type DataServices struct {
	KV       DataService `json:"kv"`
	Object   DataService `json:"object"`
	Postgres DataService `json:"postgres"`
}

// Service returns one data service by name.
func (d DataServices) Service(name string) DataService {
	switch name {
	case DataKV:
		return d.KV
	case DataObject:
		return d.Object
	case DataPostgres:
		return d.Postgres
	}
	return DataService{}
}

// SkupperSite is the Skupper site RunR created in a region's project namespace.
type SkupperSite struct {
	Status    ComponentStatus `json:"status,omitempty"`
	Message   string          `json:"message,omitempty"`
	UpdatedAt time.Time       `json:"updated_at,omitempty"`
}

// State is the site's status, not_installed until it has one.
func (s SkupperSite) State() ComponentStatus {
	return s.Status.orNotInstalled()
}

// SetRegionDataService records one data service of a region (the others stay as they
// are, whatever another job writes meanwhile).
func (s *Store) SetRegionDataService(ctx context.Context, id, name string, v DataService) error {
	v.UpdatedAt = time.Now().UTC()
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: set data service %s of %s: %w", name, id, err)
	}
	res, err := s.db(ctx).ExecContext(ctx, `UPDATE regions SET data_services = jsonb_set(data_services, ARRAY[$2::text], $3::jsonb, true),
		updated_at = now() WHERE id = $1`, id, name, string(raw))
	if err := affected("set data service "+name+" of "+id, res, err); err != nil {
		return err
	}
	return s.NotifyRegion(ctx, id)
}

// SetObjectSecretKey records the administrator's secret key of the region's external
// object store, encrypted ("" forgets it).
func (s *Store) SetObjectSecretKey(ctx context.Context, id, key string) error {
	return s.updateRegion(ctx, "set object store key of", id, cols{{"object_secret_key", key}})
}

// SetRegionSkupper records a region's Skupper site.
func (s *Store) SetRegionSkupper(ctx context.Context, id string, v SkupperSite) error {
	v.UpdatedAt = time.Now().UTC()
	return s.updateRegion(ctx, "set region Skupper site", id, cols{{"skupper", JSON[SkupperSite]{V: v}}})
}

// Binding gives one project its own part of one data service of its region: a Redis
// user limited to its key prefix, a bucket, or a database with its role. Its
// credentials are the connection settings the project gets as secret env.
type Binding struct {
	ID        string          `db:"id" json:"id"`
	ProjectID string          `db:"project_id" json:"project_id"`
	RegionID  *string         `db:"region_id" json:"region_id"`
	Service   string          `db:"service" json:"service"`
	Status    ComponentStatus `db:"status" json:"status"`
	Message   string          `db:"message" json:"message"`
	Resource  string          `db:"resource" json:"resource"`
	Sealed    string          `db:"credentials" json:"-"`
	CreatedAt time.Time       `db:"created_at" json:"created_at"`
	UpdatedAt time.Time       `db:"updated_at" json:"updated_at"`
	// ProjectSlug and ProjectName are the bound project's, filled by the queries.
	ProjectSlug string `db:"project_slug" json:"project_slug"`
	ProjectName string `db:"project_name" json:"project_name"`

	// Credentials are the decrypted connection settings, env name → value (never
	// serialised).
	Credentials map[string]string `db:"-" json:"-"`
	// SecretError says that the credentials could not be decrypted.
	SecretError string `db:"-" json:"secret_error,omitempty"`
}

// Region returns the binding's region id ("" once its region was removed).
func (b *Binding) Region() string { return deref(b.RegionID) }

// CredentialNames are the env names of the binding's connection settings, never their
// values.
func (b *Binding) CredentialNames() []string {
	return append([]string{}, slices.Sorted(maps.Keys(b.Credentials))...)
}

const bindingSelect = `SELECT b.*, p.slug AS project_slug, p.name AS project_name FROM bindings b JOIN projects p ON p.id = b.project_id`

func (s *Store) openBinding(b *Binding) {
	b.Credentials = map[string]string{}
	if b.Sealed == "" {
		return
	}
	plain, err := s.Cipher.Decrypt(b.Sealed)
	if err != nil || json.Unmarshal([]byte(plain), &b.Credentials) != nil {
		b.Credentials = map[string]string{}
		b.SecretError = SecretErrorText
	}
}

// CreateBinding records a new binding with its credentials sealed; a second binding of
// the same project and service is ErrConflict.
func (s *Store) CreateBinding(ctx context.Context, b *Binding) error {
	b.ID = NewID()
	orDefault(&b.Status, ComponentInstalling)
	sealed, err := s.sealSecrets(b.Credentials)
	if err != nil {
		return wrap("create binding", err)
	}
	_, err = s.db(ctx).ExecContext(ctx, `INSERT INTO bindings (id, project_id, region_id, service, status, message, resource, credentials)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8)`, b.ID, b.ProjectID, b.RegionID, b.Service, b.Status, b.Message, b.Resource, sealed)
	if err := wrap("create binding of "+b.ProjectID+" to "+b.Service, err); err != nil {
		return err
	}
	if b.RegionID != nil {
		return s.NotifyRegion(ctx, *b.RegionID)
	}
	return nil
}

// BindingByID returns one binding with its credentials decrypted.
func (s *Store) BindingByID(ctx context.Context, id string) (*Binding, error) {
	b := &Binding{}
	if err := s.db(ctx).GetContext(ctx, b, bindingSelect+` WHERE b.id = $1`, id); err != nil {
		return nil, wrap("binding "+id, err)
	}
	s.openBinding(b)
	return b, nil
}

// ProjectBinding returns a project's binding to a service.
func (s *Store) ProjectBinding(ctx context.Context, projectID, service string) (*Binding, error) {
	b := &Binding{}
	if err := s.db(ctx).GetContext(ctx, b, bindingSelect+` WHERE b.project_id = $1 AND b.service = $2`, projectID, service); err != nil {
		return nil, wrap("binding of "+projectID+" to "+service, err)
	}
	s.openBinding(b)
	return b, nil
}

// ProjectBindings lists a project's bindings, by service.
func (s *Store) ProjectBindings(ctx context.Context, projectID string) ([]Binding, error) {
	var bs []Binding
	if err := s.db(ctx).SelectContext(ctx, &bs, bindingSelect+` WHERE b.project_id = $1 ORDER BY b.service`, projectID); err != nil {
		return nil, wrap("bindings of project "+projectID, err)
	}
	for i := range bs {
		s.openBinding(&bs[i])
	}
	return bs, nil
}

// RegionBindings lists the bindings of a region's services (of one service when
// service is set), by service and project.
func (s *Store) RegionBindings(ctx context.Context, regionID, service string) ([]Binding, error) {
	var bs []Binding
	if err := s.db(ctx).SelectContext(ctx, &bs, bindingSelect+` WHERE b.region_id = $1 AND ($2 = '' OR b.service = $2)
		ORDER BY b.service, p.slug`, regionID, service); err != nil {
		return nil, wrap("bindings of region "+regionID, err)
	}
	for i := range bs {
		s.openBinding(&bs[i])
	}
	return bs, nil
}

// SetBindingStatus records a binding's state.
func (s *Store) SetBindingStatus(ctx context.Context, id string, status ComponentStatus, message string) error {
	var region *string
	err := s.db(ctx).GetContext(ctx, &region, `UPDATE bindings SET status = $2, message = $3, updated_at = now() WHERE id = $1 RETURNING region_id`, id, status, message)
	if err := wrap("set binding status "+id, err); err != nil {
		return err
	}
	if region != nil {
		return s.NotifyRegion(ctx, *region)
	}
	return nil
}

// SetBindingCredentials replaces a binding's credentials (sealed).
func (s *Store) SetBindingCredentials(ctx context.Context, id string, creds map[string]string) error {
	sealed, err := s.sealSecrets(creds)
	if err != nil {
		return wrap("set binding credentials", err)
	}
	res, err := s.db(ctx).ExecContext(ctx, `UPDATE bindings SET credentials = $2, updated_at = now() WHERE id = $1`, id, sealed)
	return affected("set binding credentials "+id, res, err)
}

// DeleteBinding removes a binding's record.
func (s *Store) DeleteBinding(ctx context.Context, id string) error {
	var region *string
	err := s.db(ctx).GetContext(ctx, &region, `DELETE FROM bindings WHERE id = $1 RETURNING region_id`, id)
	if err := wrap("delete binding "+id, err); err != nil {
		return err
	}
	if region != nil {
		return s.NotifyRegion(ctx, *region)
	}
	return nil
}
