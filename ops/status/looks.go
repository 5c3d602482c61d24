package status

import (
	"context"
	"fmt"
	"sync"

	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// sweepLooks shares a sweep's looks at one cluster: a cluster of many regions is looked
// at once per sweepLook regions (so that processes sweeping together share it), and the
// parts this process takes reuse its first look instead of asking the cluster again.
type sweepLooks struct {
	mu    sync.Mutex
	looks map[string]*sharedLook
}

// sharedLook is one look at a cluster, done once; done is closed when st is set.
type sharedLook struct {
	done chan struct{}
	st   *clusterLook
}

func newSweepLooks() *sweepLooks { return &sweepLooks{looks: map[string]*sharedLook{}} }

// lookKey is what a look at r's cluster reads: its server and credentials, and the
// namespaces the look reads for r.
func lookKey(r *store.Region) string {
	d := r.DataServices.V
	return fmt.Sprintf("%s|%s|%s|%s|%t|%t", r.ClusterKey, kit.ShortHash(r.Kubeconfig), r.OperatorNamespace, r.ServingNamespace,
		d.Object.Ready() && !d.Object.External(), d.Postgres.Ready())
}

// look returns the sweep's look at r's cluster, made by observe the first time and
// waited for by the parts that come while it runs (within ctx). Without a sweep (nil),
// every look is made.
func (l *sweepLooks) look(ctx context.Context, r *store.Region, observe func() *clusterLook) *clusterLook {
	if l == nil {
		return observe()
	}
	k := lookKey(r)
	l.mu.Lock()
	sl, found := l.looks[k]
	if !found {
		sl = &sharedLook{done: make(chan struct{})}
		l.looks[k] = sl
	}
	l.mu.Unlock()
	if !found {
		sl.st = observe()
		close(sl.done)
		return sl.st
	}
	select {
	case <-sl.done:
		return sl.st
	case <-ctx.Done():
		return &clusterLook{err: ctx.Err()}
	}
}
