package testcluster

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
)

// chartSources holds the stand-in charts (one folder each under charts/) and the
// Knative Serving CRDs. The all: prefix keeps files such as _helpers.tpl.
//
//go:embed all:charts
var chartSources embed.FS

// servingCRDsFile is the stand-in for Knative Serving's serving-crds.yaml release asset;
// 0.0.0 in it stands for the Serving release served.
const servingCRDsFile = "charts/knative-serving-crds.yaml"

// knativeOperatorChart is packaged once per entry of KnativeOperatorVersions.
const knativeOperatorChart = "knative-operator"

// KnativeOperatorVersions are the knative-operator chart versions the repository serves,
// newest first: operator releases that exist upstream (see OperatorReleases), the newest
// patch of each minor from 1.16 to 1.23 and an older patch of some minors, so that the
// console's choice of a minor's newest patch is exercised.
var KnativeOperatorVersions = []string{
	"1.23.0", "1.22.3", "1.22.1", "1.21.4", "1.20.2", "1.20.1", "1.19.6", "1.19.3",
	"1.18.3", "1.18.1", "1.17.8", "1.17.2", "1.16.6", "1.16.3",
}

// ChartRepo is a local Helm chart repository serving the stand-in charts.
type ChartRepo struct {
	// URL is the repository's address, http://127.0.0.1:PORT (no trailing slash).
	URL string
	// Dir holds the packaged charts and index.yaml.
	Dir string

	srv       *http.Server
	served    chan error
	removeDir bool
	closeOnce sync.Once
	closeErr  error
}

// StartChartRepo packages every stand-in chart into dir (a temp dir when "") and serves it.
// Its index names the knative-operator charts as upstream's does (version v<release>,
// appVersion <release>, archives knative-operator-v<release>.tgz). It also serves the
// Knative Serving CRDs at <URL>/knative-serving/v<release>/serving-crds.yaml for every
// Serving release that exists (ServingReleases), and 404 for any other version. A temp
// dir it made is removed by Close.
func StartChartRepo(dir string) (*ChartRepo, error) {
	return startChartRepo(dir, false, "")
}

// StartChartRepoAt is StartChartRepo on a loopback address of the caller's choice
// ("127.0.0.1:0" any port): the sandbox's mirror keeps its address across restarts.
func StartChartRepoAt(dir, addr string) (*ChartRepo, error) {
	return startChartRepo(dir, false, addr)
}

// StartUpstreamKnativeChartRepo is StartChartRepo with Knative's own chart and Serving
// CRDs for KnativeRelease, taken from the operator's Go module at the release (the chart
// packaged as upstream's hack/generate-helm.sh does, the CRDs from the Serving release
// manifests the operator carries): what a real node runs with the real operator.
func StartUpstreamKnativeChartRepo(dir string) (*ChartRepo, error) {
	return startChartRepo(dir, true, "")
}

func startChartRepo(dir string, upstreamKnative bool, addr string) (*ChartRepo, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	removeDir := false
	if dir == "" {
		d, err := os.MkdirTemp("", "runr-chartrepo-")
		if err != nil {
			return nil, fmt.Errorf("testcluster: chart repository dir: %w", err)
		}
		dir, removeDir = d, true
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("testcluster: chart repository dir: %w", err)
	}
	fail := func(err error) (*ChartRepo, error) {
		if removeDir {
			os.RemoveAll(dir)
		}
		return nil, err
	}

	crds, err := chartSources.ReadFile(servingCRDsFile)
	if err != nil {
		return fail(fmt.Errorf("testcluster: serving CRDs: %w", err))
	}
	if err := packageCharts(dir); err != nil {
		return fail(err)
	}
	var upstreamCRDs []byte
	if upstreamKnative {
		if upstreamCRDs, err = packageUpstreamKnative(dir); err != nil {
			return fail(err)
		}
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fail(fmt.Errorf("testcluster: chart repository listen on %s: %w", addr, err))
	}
	url := "http://" + ln.Addr().String()

	idx, err := repo.IndexDirectory(dir, url)
	if err != nil {
		ln.Close()
		return fail(fmt.Errorf("testcluster: index charts: %w", err))
	}
	for _, cv := range idx.Entries[knativeOperatorChart] {
		// Upstream's index (gh-pages of knative/operator, written by
		// hack/find_helm_chart_releases_and_create_helm_index.sh) prefixes the version.
		cv.AppVersion = cv.Version
		cv.Version = "v" + cv.Version
		cv.APIVersion = "v2"
	}
	idx.SortEntries()
	if err := idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		ln.Close()
		return fail(fmt.Errorf("testcluster: write index.yaml: %w", err))
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /knative-serving/{version}/serving-crds.yaml", func(w http.ResponseWriter, r *http.Request) {
		v := r.PathValue("version")
		if len(v) < 2 || v[0] != 'v' || !slices.Contains(ServingReleases(), v[1:]) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/yaml")
		if upstreamCRDs != nil && v[1:] == KnativeRelease {
			w.Write(upstreamCRDs)
			return
		}
		w.Write(bytes.ReplaceAll(crds, []byte("0.0.0"), []byte(v[1:])))
	})
	mux.Handle("GET /", http.FileServer(http.Dir(dir)))

	r := &ChartRepo{
		URL:       url,
		Dir:       dir,
		srv:       &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		served:    make(chan error, 1),
		removeDir: removeDir,
	}
	go func() { r.served <- r.srv.Serve(ln) }()
	return r, nil
}

// Rebase makes the index name the charts at base (the repository as another network
// reaches it, e.g. the pods of a real-node cluster through Cluster.Expose) instead of URL.
func (r *ChartRepo) Rebase(base string) error {
	file := filepath.Join(r.Dir, "index.yaml")
	idx, err := repo.LoadIndexFile(file)
	if err != nil {
		return fmt.Errorf("testcluster: read index.yaml: %w", err)
	}
	for _, versions := range idx.Entries {
		for _, cv := range versions {
			for i, u := range cv.URLs {
				cv.URLs[i] = strings.Replace(u, r.URL, base, 1)
			}
		}
	}
	if err := idx.WriteFile(file, 0o644); err != nil {
		return fmt.Errorf("testcluster: write index.yaml: %w", err)
	}
	return nil
}

// Close stops the server (and removes the directory when StartChartRepo made it).
func (r *ChartRepo) Close() error {
	r.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := r.srv.Shutdown(ctx)
		if err != nil {
			r.srv.Close()
		}
		if serr := <-r.served; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		if r.removeDir {
			if rerr := os.RemoveAll(r.Dir); rerr != nil && err == nil {
				err = rerr
			}
		}
		if err != nil {
			r.closeErr = fmt.Errorf("testcluster: close chart repository: %w", err)
		}
	})
	return r.closeErr
}

// packageCharts writes every embedded chart as a .tgz into dir; the knative-operator
// chart once per entry of KnativeOperatorVersions, as knative-operator-v<release>.tgz.
func packageCharts(dir string) error {
	entries, err := chartSources.ReadDir("charts")
	if err != nil {
		return fmt.Errorf("testcluster: read embedded charts: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		files, err := chartFiles(path.Join("charts", e.Name()))
		if err != nil {
			return err
		}
		if e.Name() != knativeOperatorChart {
			if err := saveChart(dir, files, ""); err != nil {
				return err
			}
			continue
		}
		for _, v := range KnativeOperatorVersions {
			if err := saveChart(dir, withRelease(files, v), "knative-operator-v"+v+".tgz"); err != nil {
				return err
			}
		}
	}
	return nil
}

// withRelease copies a chart's files with 0.0.0 in Chart.yaml and values.yaml replaced
// by an operator release, as upstream's release script does.
func withRelease(files []*loader.BufferedFile, release string) []*loader.BufferedFile {
	out := make([]*loader.BufferedFile, len(files))
	for i, f := range files {
		data := f.Data
		if f.Name == "Chart.yaml" || f.Name == "values.yaml" {
			data = bytes.ReplaceAll(data, []byte("0.0.0"), []byte(release))
		}
		out[i] = &loader.BufferedFile{Name: f.Name, Data: data}
	}
	return out
}

// saveChart loads a chart's files and writes its archive into dir, renamed to archive
// when that is not "".
func saveChart(dir string, files []*loader.BufferedFile, archive string) error {
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return fmt.Errorf("testcluster: load chart: %w", err)
	}
	saved, err := chartutil.Save(ch, dir)
	if err != nil {
		return fmt.Errorf("testcluster: package chart %s %s: %w", ch.Name(), ch.Metadata.Version, err)
	}
	if archive != "" {
		if err := os.Rename(saved, filepath.Join(dir, archive)); err != nil {
			return fmt.Errorf("testcluster: package chart %s: %w", archive, err)
		}
	}
	return nil
}

// chartFiles reads one embedded chart's files, named relative to its folder.
func chartFiles(root string) ([]*loader.BufferedFile, error) {
	var files []*loader.BufferedFile
	err := fs.WalkDir(chartSources, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := chartSources.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, &loader.BufferedFile{Name: p[len(root)+1:], Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("testcluster: read embedded chart %s: %w", root, err)
	}
	return files, nil
}

// packageUpstreamKnative replaces the knative-operator chart of KnativeRelease in dir with
// upstream's, from the operator's module ({{ version }} and {{ tag }} filled in as
// hack/generate-helm.sh does), and returns the release's Serving CRDs.
func packageUpstreamKnative(dir string) ([]byte, error) {
	src, err := moduleDir(knativeOperatorBuild.Module, knativeOperatorBuild.Version)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(src, "config", "charts", "knative-operator")
	var files []*loader.BufferedFile
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch rel {
		case "Chart.yaml":
			data = bytes.ReplaceAll(data, []byte("{{ version }}"), []byte(KnativeRelease))
		case "values.yaml":
			data = bytes.ReplaceAll(data, []byte("{{ tag }}"), []byte("v"+KnativeRelease))
		}
		files = append(files, &loader.BufferedFile{Name: filepath.ToSlash(rel), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("testcluster: upstream knative-operator chart: %w", err)
	}
	if err := saveChart(dir, files, "knative-operator-v"+KnativeRelease+".tgz"); err != nil {
		return nil, err
	}
	crds, err := os.ReadFile(filepath.Join(src, "cmd", "operator", "kodata", "knative-serving", KnativeRelease, "1-serving-crds.yaml"))
	if err != nil {
		return nil, fmt.Errorf("testcluster: upstream Serving CRDs: %w", err)
	}
	return crds, nil
}
