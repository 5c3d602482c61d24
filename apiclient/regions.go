package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Region is what the CLI's tables show of a region (GET /api/knative-regions/{id});
// Raw keeps the whole object as the API sent it, for -o json and -o yaml.
type Region struct {
	ID                    string                    `json:"id"`
	Name                  string                    `json:"name"`
	RegionStatus          string                    `json:"region_status"`
	SecretError           string                    `json:"secret_error"`
	ClusterServer         string                    `json:"cluster_server"`
	K8sVersion            string                    `json:"k8s_version"`
	Nodes                 []string                  `json:"nodes"`
	DataLocation          string                    `json:"data_location"`
	RegistryMode          string                    `json:"registry_mode"`
	RegistryStatus        string                    `json:"registry_status"`
	RegistryStatusMessage string                    `json:"registry_status_message"`
	RegistryAddress       string                    `json:"registry_address"`
	OperatorStatus        string                    `json:"operator_status"`
	ServingStatus         string                    `json:"serving_status"`
	ServingNamespace      string                    `json:"serving_namespace"`
	KnativeVersion        string                    `json:"knative_version"`
	KnativeMessage        string                    `json:"knative_message"`
	RedisMode             string                    `json:"redis_mode"`
	RedisStatus           string                    `json:"redis_status"`
	KnativeDomain         string                    `json:"knative_domain"`
	ExternalIP            string                    `json:"external_ip"`
	DNSInstruction        string                    `json:"dns_instruction"`
	MigrationStatus       string                    `json:"migration_status"`
	DomainMigrationStatus string                    `json:"domain_migration_status"`
	Components            map[string]ComponentState `json:"components"`
	Settings              map[string]any            `json:"settings"`
	Monitoring            map[string]any            `json:"monitoring"`
	Health                map[string]any            `json:"health"`
	Glance                HealthGlance              `json:"health_at_a_glance"`
	CheckedAt             *time.Time                `json:"checked_at"`
	FaaSCPUOvercommit     float64                   `json:"faas_cpu_overcommit"`
	FaaSMemoryOvercommit  float64                   `json:"faas_memory_overcommit"`
	ProjectCount          int                       `json:"project_count"`
	Raw                   json.RawMessage           `json:"-"`
}

// ComponentState is one component of a region's components map.
type ComponentState struct {
	Status  string `json:"status"`
	Version string `json:"version"`
	Message string `json:"message"`
}

// decodeRegion reads a region and keeps its raw JSON.
func decodeRegion(raw json.RawMessage) (*Region, error) {
	r := &Region{}
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("read a region: %w", err)
	}
	r.Raw = raw
	return r, nil
}

// Regions lists every region (GET /api/knative-regions, page by page).
func (c *Client) Regions(ctx context.Context, query string) ([]Region, error) {
	return c.RegionsWhere(ctx, RegionQuery{Name: query})
}

// HealthGlance is a region's health at a glance: its worst layer's state and reason.
type HealthGlance struct {
	State  string `json:"state"`
	Reason string `json:"reason"`
}

// RegionQuery narrows and orders a region list: a part of the name, a health filter
// ("attention", or a state), and "health" to list the worst first.
type RegionQuery struct{ Name, Health, Sort string }

// RegionsWhere lists the regions a query selects, every page.
func (c *Client) RegionsWhere(ctx context.Context, rq RegionQuery) ([]Region, error) {
	var out []Region
	for page := 1; ; page++ {
		var ans struct {
			Data []json.RawMessage `json:"data"`
			Meta struct {
				Total int `json:"total"`
			} `json:"meta"`
		}
		q := url.Values{"per_page": {"500"}, "page": {fmt.Sprint(page)}}
		for k, v := range map[string]string{"q": rq.Name, "health": rq.Health, "sort": rq.Sort} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if err := c.Do(ctx, http.MethodGet, "/api/knative-regions?"+q.Encode(), nil, &ans); err != nil {
			return nil, err
		}
		for _, raw := range ans.Data {
			r, err := decodeRegion(raw)
			if err != nil {
				return nil, err
			}
			out = append(out, *r)
		}
		if len(ans.Data) == 0 || len(out) >= ans.Meta.Total {
			return out, nil
		}
	}
}

// Region finds a region by name or id: the API addresses regions by id, the CLI by the
// name people use.
func (c *Client) Region(ctx context.Context, ref string) (*Region, error) {
	var ans struct {
		Data json.RawMessage `json:"data"`
	}
	err := c.Do(ctx, http.MethodGet, "/api/knative-regions/"+url.PathEscape(ref), nil, &ans)
	if err == nil {
		return decodeRegion(ans.Data)
	}
	if !IsNotFound(err) {
		return nil, err
	}
	rs, err := c.Regions(ctx, ref)
	if err != nil {
		return nil, err
	}
	for i := range rs {
		if rs[i].Name == ref {
			return &rs[i], nil
		}
	}
	return nil, fmt.Errorf("the console has no region %q (runr regions list shows them)", ref)
}

// RegionPath is the API path of a region's sub-resource: /api/knative-regions/{id}/{sub}.
func RegionPath(id, sub string) string {
	p := "/api/knative-regions/" + url.PathEscape(id)
	if sub != "" {
		p += "/" + sub
	}
	return p
}

// Accepted is the answer of a route that queues a job (202).
type Accepted struct {
	JobID   string `json:"job_id"`
	Warning string `json:"warning,omitempty"`
}

// Post sends a request to a route that queues a job and returns the job's id.
func (c *Client) Post(ctx context.Context, method, path string, in any) (*Accepted, error) {
	var out Accepted
	if err := c.Do(ctx, method, path, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
