package status

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"runr.dev/console/store"
)

// The parts of one cluster in a sweep share one look at it: the first part looks, the
// parts that come meanwhile wait for it, and a region that reads other namespaces, or
// another cluster, gets a look of its own; without a sweep every check looks.
func TestSweepLooksShareOneLookPerCluster(t *testing.T) {
	a := &store.Region{ClusterKey: "a", Kubeconfig: "kc-a", OperatorNamespace: "knative-operator", ServingNamespace: "knative-serving"}
	a2 := *a
	otherNS := *a
	otherNS.ServingNamespace = "serving-2"
	b := *a
	b.ClusterKey = "b"

	looks := newSweepLooks()
	var made atomic.Int32
	release := make(chan struct{})
	observe := func() *clusterLook {
		made.Add(1)
		<-release
		return &clusterLook{version: "v1.33.1"}
	}
	var wg sync.WaitGroup
	got := make([]*clusterLook, 4)
	for i := range got {
		wg.Go(func() { got[i] = looks.look(context.Background(), a, observe) })
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if made.Load() != 1 {
		t.Fatalf("four parts of one cluster made %d looks, want 1", made.Load())
	}
	for _, st := range got {
		if st != got[0] || st.version != "v1.33.1" {
			t.Fatalf("the parts must share the first look: %+v", got)
		}
	}
	if looks.look(context.Background(), &a2, observe) != got[0] || made.Load() != 1 {
		t.Fatal("a later part of the same cluster must reuse the look")
	}
	looks.look(context.Background(), &otherNS, observe)
	looks.look(context.Background(), &b, observe)
	if made.Load() != 3 {
		t.Fatalf("other namespaces and another cluster need looks of their own: %d looks", made.Load())
	}
	var none *sweepLooks
	none.look(context.Background(), a, observe)
	none.look(context.Background(), a, observe)
	if made.Load() != 5 {
		t.Fatalf("without a sweep every check looks: %d looks", made.Load())
	}

	// A part whose deadline ends while it waits says so.
	slow := newSweepLooks()
	hold := make(chan struct{})
	defer close(hold)
	go slow.look(context.Background(), a, func() *clusterLook { <-hold; return &clusterLook{} })
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if st := slow.look(ctx, a, observe); !errors.Is(st.err, context.DeadlineExceeded) {
		t.Fatalf("a waiting part past its deadline: %v", st.err)
	}
}
