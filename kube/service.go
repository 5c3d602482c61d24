// Package kube acts on the regions' clusters: cluster access from stored kubeconfigs,
// Helm through its SDK, one file per component, the job engine and its progress events,
// and the status checks.
package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"sync"

	"runr.dev/console/config"
	"runr.dev/console/store"
)

// FieldManager is the server-side apply field manager of everything the console owns.
const FieldManager = "runr-console"

// Service is the console's cluster side: it runs jobs and checks regions.
type Service struct {
	Store  *store.Store
	Cfg    *config.Config
	Log    *slog.Logger
	Charts *ChartSource

	owner    string
	kinds    map[string]*Kind
	clusters sync.Map // kubeconfig hash -> *Cluster
	// releaseCache keeps the workloads of each Helm release revision the status check read.
	releaseCache sync.Map // releaseRevision -> []Workload
	wake         chan struct{}
	breaker      *breaker
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
		Charts:  NewChartSource(cfg),
		owner:   host + "/" + store.NewID(),
		kinds:   map[string]*Kind{},
		wake:    make(chan struct{}, 1),
		breaker: newBreaker(),
	}
	s.registerKinds()
	return s
}

// Owner is this console process's identity in job leases.
func (s *Service) Owner() string { return s.owner }

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
