// Package kit is what every feature of the operations shares: the console's store,
// configuration, log, charts and job engine, the cluster accesses, the one step shape
// of a job on a region, Helm installs under a lock, and the small helpers of objects the
// console owns.
package kit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"runr.dev/console/config"
	"runr.dev/console/engine"
	"runr.dev/console/helm"
	"runr.dev/console/kube"
	"runr.dev/console/store"
)

// Kit is the dependencies every feature of the operations holds.
type Kit struct {
	Store  *store.Store
	Cfg    *config.Config
	Log    *slog.Logger
	Charts *helm.ChartSource
	// Engine runs the jobs whose kinds the features register.
	Engine *engine.Engine

	clusters   sync.Map // kubeconfig hash -> *kube.Cluster
	clientSets atomic.Int64
}

// New builds the shared dependencies and the job engine of a console process.
func New(st *store.Store, cfg *config.Config, log *slog.Logger) *Kit {
	host, _ := os.Hostname()
	k := &Kit{
		Store:  st,
		Cfg:    cfg,
		Log:    log,
		Charts: helm.NewChartSource(cfg.ChartMirror, cfg.ServingCRDsURL),
		Engine: engine.New(st, log, host+"/"+store.NewID(), cfg.InstallTimeout),
	}
	k.Engine.Release = config.Version
	return k
}

// Owner is this console process's identity in job leases.
func (s *Kit) Owner() string { return s.Engine.Owner() }

// Enqueue records a job of a kind this service registered; a runner picks it up.
func (s *Kit) Enqueue(ctx context.Context, req engine.Request) (*store.Job, error) {
	return s.Engine.Enqueue(ctx, req)
}

// JobRegion loads the job's region, fresh.
func (s *Kit) JobRegion(ctx context.Context, jc *engine.JobContext) (*store.Region, error) {
	if jc.Job.Region() == "" {
		return nil, errors.New("this job has no region")
	}
	r, err := s.Store.RegionByID(ctx, jc.Job.Region())
	if err == nil && r.SecretError != "" {
		// A job acting on blank secrets could overwrite them: it stops, retryable once
		// the console has the key again.
		return nil, fmt.Errorf("region %s: %s", r.Name, r.SecretError)
	}
	return r, err
}

// RegionAndCluster loads the job's region and its cluster access.
func (s *Kit) RegionAndCluster(ctx context.Context, jc *engine.JobContext) (*store.Region, *kube.Cluster, error) {
	r, err := s.JobRegion(ctx, jc)
	if err != nil {
		return nil, nil, err
	}
	c, err := s.RegionCluster(r)
	if err != nil {
		return nil, nil, err
	}
	return r, c, nil
}

// Record logs (does not return) a failure to record a region's state: used in steps and
// hooks whose own outcome matters more.
func (s *Kit) Record(err error) {
	if err != nil {
		s.Log.Warn("record the region's state", "err", err)
	}
}

// RegionRun is what a region step does, with the job's region and its cluster.
type RegionRun func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error

// SkipUnless runs a region step only when the job asks for it, and skips it otherwise.
func SkipUnless(asked bool, run RegionRun) RegionRun {
	if asked {
		return run
	}
	return func(context.Context, *engine.JobContext, *store.Region, *kube.Cluster) error { return engine.ErrSkip }
}

// RegionStep is a step of a job on a region, run with the job's region and its cluster.
func (s *Kit) RegionStep(name, title string, run RegionRun) engine.Step {
	return engine.Step{Name: name, Title: title, Run: func(ctx context.Context, jc *engine.JobContext) error {
		r, c, err := s.RegionAndCluster(ctx, jc)
		if err != nil {
			return err
		}
		return run(ctx, jc, r, c)
	}}
}

// Actor is who asks for a use case: a user's e-mail, a token's owner, or "cli", with the
// permissions it holds (none for the CLI: its use cases check none).
type Actor struct {
	Email string
	Perms map[string]bool
	// TenantID is the actor's tenant ("" for a platform user and the CLI); Role its role.
	TenantID string
	Role     string
}

// Can reports whether the actor holds a permission.
func (a Actor) Can(perm string) bool { return a.Perms[perm] }

// Busy reports whether a job of one of the kinds is queued or runs on the region.
func (s *Kit) Busy(ctx context.Context, regionID string, kinds ...string) (bool, error) {
	for _, k := range kinds {
		_, err := s.Store.ActiveJob(ctx, regionID, k)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return false, fmt.Errorf("active %s job of region %s: %w", k, regionID, err)
		}
	}
	return false, nil
}

// Platform reports whether the actor is a platform user (outside any tenant), or the CLI.
func (a Actor) Platform() bool { return a.TenantID == "" }

// DecodeSecret reads a job's secret parameters (the zero value when it has none).
func DecodeSecret[T any](jc *engine.JobContext) (T, error) {
	var v T
	if jc.Secret == "" {
		return v, nil
	}
	if err := json.Unmarshal([]byte(jc.Secret), &v); err != nil {
		return v, fmt.Errorf("decode the job's secret parameters: %w", err)
	}
	return v, nil
}

// ShortHash is a short stable hash of s, for names derived from it.
func ShortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:6])
}

// EachRegionOnCluster runs f for every region on r's cluster (r too), stopping at the
// first error: what they share (Knative) is recorded on each.
func (s *Kit) EachRegionOnCluster(ctx context.Context, r *store.Region, f func(x *store.Region) error) error {
	rs, err := s.Store.RegionsOnCluster(ctx, r.ClusterKey)
	if err != nil {
		return fmt.Errorf("regions on the cluster of %s: %w", r.Name, err)
	}
	for i := range rs {
		if err := f(&rs[i]); err != nil {
			return err
		}
	}
	return nil
}

// OtherRegionsOnCluster are the regions on r's cluster other than r: what they share with
// it (Knative, GPU support, sandbox runtimes) or hold once per cluster (the internal
// registry, the data services) is theirs too.
func (s *Kit) OtherRegionsOnCluster(ctx context.Context, r *store.Region) ([]store.Region, error) {
	rs, err := s.Store.RegionsOnCluster(ctx, r.ClusterKey)
	if err != nil {
		return nil, fmt.Errorf("regions on the cluster of %s: %w", r.Name, err)
	}
	out := rs[:0]
	for _, x := range rs {
		if x.ID != r.ID {
			out = append(out, x)
		}
	}
	return out, nil
}
