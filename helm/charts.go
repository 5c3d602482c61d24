package helm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

// ChartRef names a chart in its upstream repository.
type ChartRef struct {
	Repo    string
	Name    string
	Version string
}

func (r ChartRef) String() string { return r.Name + " " + r.Version }

// ChartSource fetches charts from their repositories, or from one mirror
// (RUNR_CHART_MIRROR) that serves every chart under the same names and versions.
type ChartSource struct {
	mirror   string
	crdsURL  string
	client   *http.Client
	mu       sync.Mutex
	indexes  map[string]cachedIndex
	charts   map[string][]byte // archives
	fetching map[string]*sync.Mutex
}

type cachedIndex struct {
	idx *repo.IndexFile
	at  time.Time
}

// NewChartSource builds the chart source: mirror is one repository that serves every
// chart ("" for their own), crdsURL the template of the Knative Serving CRDs' address
// (%s is the version; "" for the mirror's, else the Serving release's on GitHub).
func NewChartSource(mirror, crdsURL string) *ChartSource {
	crds := crdsURL
	if crds == "" {
		if mirror != "" {
			crds = mirror + "/knative-serving/v%s/serving-crds.yaml"
		} else {
			crds = "https://github.com/knative/serving/releases/download/knative-v%s/serving-crds.yaml"
		}
	}
	return &ChartSource{mirror: mirror, crdsURL: crds, client: &http.Client{Timeout: 60 * time.Second},
		indexes: map[string]cachedIndex{}, charts: map[string][]byte{}, fetching: map[string]*sync.Mutex{}}
}

// isOCI reports a chart published in an OCI registry (oci://…) and fetched from there (a
// mirror serves every chart from its own index).
func (cs *ChartSource) isOCI(ref ChartRef) bool {
	return cs.mirror == "" && strings.HasPrefix(ref.Repo, "oci://")
}

// pullOCI fetches a chart archive from an OCI registry.
func (cs *ChartSource) pullOCI(ref ChartRef) ([]byte, error) {
	c, err := registry.NewClient(registry.ClientOptEnableCache(false))
	if err != nil {
		return nil, fmt.Errorf("OCI registry client: %w", err)
	}
	res, err := c.Pull(strings.TrimPrefix(ref.Repo, "oci://")+"/"+ref.Name+":"+ref.Version, registry.PullOptWithChart(true))
	if err != nil {
		return nil, fmt.Errorf("pull chart %s %s from %s: %w", ref.Name, ref.Version, ref.Repo, err)
	}
	return res.Chart.Data, nil
}

func (cs *ChartSource) repoURL(ref ChartRef) string {
	if cs.mirror != "" {
		return cs.mirror
	}
	return ref.Repo
}

func (cs *ChartSource) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := cs.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 64<<20))
}

// Index returns a repository's index (cached for a minute).
func (cs *ChartSource) Index(ctx context.Context, repoURL string) (*repo.IndexFile, error) {
	cs.mu.Lock()
	ci, ok := cs.indexes[repoURL]
	cs.mu.Unlock()
	if ok && time.Since(ci.at) < time.Minute {
		return ci.idx, nil
	}
	raw, err := cs.get(ctx, strings.TrimRight(repoURL, "/")+"/index.yaml")
	if err != nil {
		hint := "set RUNR_CHART_MIRROR for an air-gapped mirror"
		if cs.mirror != "" {
			hint = "it is RUNR_CHART_MIRROR: check that the mirror runs at that address (a reset sandbox has a new one: restart the console with its new env)"
		}
		return nil, fmt.Errorf("chart repository %s: %w (%s)", repoURL, err, hint)
	}
	idx := &repo.IndexFile{}
	if err := yaml.Unmarshal(raw, idx); err != nil {
		return nil, fmt.Errorf("chart repository %s: bad index.yaml: %w", repoURL, err)
	}
	idx.SortEntries()
	cs.mu.Lock()
	cs.indexes[repoURL] = cachedIndex{idx: idx, at: time.Now()}
	cs.mu.Unlock()
	return idx, nil
}

// Versions lists the versions of a chart its repository has, newest first.
func (cs *ChartSource) Versions(ctx context.Context, ref ChartRef) ([]string, error) {
	var tags []string
	if cs.isOCI(ref) {
		c, err := registry.NewClient(registry.ClientOptEnableCache(false))
		if err != nil {
			return nil, fmt.Errorf("OCI registry client: %w", err)
		}
		if tags, err = c.Tags(strings.TrimPrefix(ref.Repo, "oci://") + "/" + ref.Name); err != nil {
			return nil, fmt.Errorf("list the versions of %s/%s: %w", ref.Repo, ref.Name, err)
		}
	} else {
		idx, err := cs.Index(ctx, cs.repoURL(ref))
		if err != nil {
			return nil, err
		}
		for _, e := range idx.Entries[ref.Name] {
			tags = append(tags, e.Version)
		}
	}
	var vs []*semver.Version
	for _, t := range tags {
		if v, err := semver.NewVersion(t); err == nil {
			vs = append(vs, v)
		}
	}
	sort.Sort(sort.Reverse(semver.Collection(vs)))
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Original()
	}
	return out, nil
}

// Load fetches and loads a chart. The archive is cached for the life of the process and
// every call parses a chart of its own: Helm changes the chart it installs (it drops the
// subcharts the values disable), so a shared one would carry one release's values into
// the next and race between installs that run at once.
func (cs *ChartSource) Load(ctx context.Context, ref ChartRef) (*chart.Chart, error) {
	raw, err := cs.archive(ctx, ref)
	if err != nil {
		return nil, err
	}
	ch, err := loader.LoadArchive(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("load chart %s %s: %w", ref.Name, ref.Version, err)
	}
	return ch, nil
}

// archive returns a chart's archive, downloaded once per process.
func (cs *ChartSource) archive(ctx context.Context, ref ChartRef) ([]byte, error) {
	key := cs.repoURL(ref) + "|" + ref.Name + "|" + ref.Version
	cs.mu.Lock()
	if raw, ok := cs.charts[key]; ok {
		cs.mu.Unlock()
		return raw, nil
	}
	lock, ok := cs.fetching[key]
	if !ok {
		lock = &sync.Mutex{}
		cs.fetching[key] = lock
	}
	cs.mu.Unlock()
	lock.Lock()
	defer lock.Unlock()
	cs.mu.Lock()
	if raw, ok := cs.charts[key]; ok {
		cs.mu.Unlock()
		return raw, nil
	}
	cs.mu.Unlock()
	raw, err := cs.download(ctx, ref)
	if err != nil {
		return nil, err
	}
	cs.mu.Lock()
	cs.charts[key] = raw
	cs.mu.Unlock()
	return raw, nil
}

// download fetches a chart's archive from its repository's index or its OCI registry.
func (cs *ChartSource) download(ctx context.Context, ref ChartRef) ([]byte, error) {
	if cs.isOCI(ref) {
		return cs.pullOCI(ref)
	}
	repoURL := cs.repoURL(ref)
	idx, err := cs.Index(ctx, repoURL)
	if err != nil {
		return nil, err
	}
	cv, err := idx.Get(ref.Name, ref.Version)
	if err != nil {
		return nil, fmt.Errorf("chart %s %s is not in %s", ref.Name, ref.Version, repoURL)
	}
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("chart %s %s in %s has no download address", ref.Name, ref.Version, repoURL)
	}
	u, err := resolveURL(repoURL, cv.URLs[0])
	if err != nil {
		return nil, err
	}
	raw, err := cs.get(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("download chart %s %s: %w", ref.Name, ref.Version, err)
	}
	return raw, nil
}

// ServingCRDs fetches the Knative Serving CRDs of a version (e.g. "1.20.0").
func (cs *ChartSource) ServingCRDs(ctx context.Context, version string) ([]byte, error) {
	u := fmt.Sprintf(cs.crdsURL, strings.TrimPrefix(version, "v"))
	raw, err := cs.get(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("fetch the Knative Serving CRDs: %w", err)
	}
	return raw, nil
}

func resolveURL(base, ref string) (string, error) {
	b, err := url.Parse(strings.TrimRight(base, "/") + "/")
	if err != nil {
		return "", fmt.Errorf("bad repository URL %q: %w", base, err)
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("bad chart URL %q: %w", ref, err)
	}
	return b.ResolveReference(r).String(), nil
}
