// Package ops is what the console does with regions: one file per component giving its
// steps (zot, traefik, knative, observability, tracing, redis, agent, block, tls) and one
// per use case (setup, settings, knative, moves, base domain, projects, nodes, workers),
// the status sweep and capacity. Use cases are Fiber-free functions that handlers and the
// CLI call alike.
package ops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"runr.dev/console/config"
	"runr.dev/console/engine"
	"runr.dev/console/helm"
	"runr.dev/console/store"
)

// Service is the console's cluster side: it runs jobs and checks regions.
type Service struct {
	Store  *store.Store
	Cfg    *config.Config
	Log    *slog.Logger
	Charts *helm.ChartSource
	// Engine runs the jobs whose kinds this service registers.
	Engine *engine.Engine

	clusters sync.Map // kubeconfig hash -> *kube.Cluster
	// releaseCache keeps the workloads of each Helm release revision the status check read.
	releaseCache sync.Map // releaseRevision -> []Workload
	breaker      *breaker
	// checks are the status checks on demand still running.
	checks sync.WaitGroup
	// checksDone counts the region checks this process recorded.
	checksDone atomic.Int64
	// periodics run after every status sweep.
	periodics []func(context.Context)
}

// NewService builds the cluster side of the console.
func NewService(st *store.Store, cfg *config.Config, log *slog.Logger) *Service {
	host, _ := os.Hostname()
	s := &Service{
		Store:   st,
		Cfg:     cfg,
		Log:     log,
		Charts:  helm.NewChartSource(cfg.ChartMirror, cfg.ServingCRDsURL),
		Engine:  engine.New(st, log, host+"/"+store.NewID(), cfg.InstallTimeout),
		breaker: newBreaker(),
	}
	s.Engine.Release = config.Version
	s.registerKinds()
	return s
}

// ChecksDone is how many region checks this process recorded since it started.
func (s *Service) ChecksDone() int64 { return s.checksDone.Load() }

// Owner is this console process's identity in job leases.
func (s *Service) Owner() string { return s.Engine.Owner() }

// Enqueue records a job of a kind this service registered; a runner picks it up.
func (s *Service) Enqueue(ctx context.Context, req engine.Request) (*store.Job, error) {
	return s.Engine.Enqueue(ctx, req)
}

// RunWorkers runs n job runners until ctx ends.
func (s *Service) RunWorkers(ctx context.Context, n int) { s.Engine.Run(ctx, n) }

// jobRegion loads the job's region, fresh.
func (s *Service) jobRegion(ctx context.Context, jc *engine.JobContext) (*store.Region, error) {
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

func hashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:6])
}

// Periodic runs the checks that complete moves and domain migrations (after each sweep).
func (s *Service) Periodic(ctx context.Context) {
	for _, f := range s.periodics {
		f(ctx)
	}
}
