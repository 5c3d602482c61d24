package ops_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"runr.dev/console/config"
	"runr.dev/console/kube"
	"runr.dev/console/ops"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
)

// Two console processes on one database sweep each region once per interval between
// them (the sweep's parts are claimed per interval), not once each.
func TestTwoConsolesSweepEachRegionOncePerInterval(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	st := storetest.New(t)
	ctx := context.Background()
	kc := c.Kubeconfig()
	parsed, err := kube.ParseKubeconfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	const regions = 3
	for i := range regions {
		r := &store.Region{Name: fmt.Sprintf("sweep-%d", i), Kubeconfig: string(kc), ClusterServer: parsed.Server,
			ClusterKey: kube.ClusterKey(parsed.Server), Status: store.RegionActive}
		if err := st.CreateRegion(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	const interval = time.Second
	console := func() *ops.Service {
		cfg := &config.Config{StatusInterval: interval, StatusTimeout: 5 * time.Second, StatusConcurrency: 8,
			InstallTimeout: time.Minute, AllowLoopbackClusters: true}
		return ops.NewService(st, cfg, webtest.Logger())
	}
	a, b := console(), console()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	started := time.Now()
	for _, s := range []*ops.Service{a, b} {
		go func() { s.Status.RunBackground(runCtx); done <- struct{}{} }()
	}
	time.Sleep(4*interval + interval/2)
	stop()
	<-done
	<-done
	elapsed := time.Since(started)
	checks := a.Status.ChecksDone() + b.Status.ChecksDone()
	// Once per interval per region: at most one more interval than elapsed, never twice.
	maxChecks := int64(regions * (int(elapsed/interval) + 1))
	if checks < regions*3 || checks > maxChecks {
		t.Fatalf("%d region checks by two consoles in %s (a %d, b %d), want %d to %d: each region once per interval",
			checks, elapsed.Round(time.Millisecond), a.Status.ChecksDone(), b.Status.ChecksDone(), regions*3, maxChecks)
	}
}

// Console processes sweeping at once share the shards: each region is checked once, by
// one of them, and both take part (a process claims a shard only when a checker is free
// for it, so the first cannot claim every shard before the second starts).
func TestSweepFleetSharesTheShards(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	hole := blackHole(t)
	const regions = 48
	for i := range regions {
		// Each region names its cluster by its own path, so the regions fall in many shards.
		downRegion(t, st, fmt.Sprintf("fleet-%d", i), fmt.Sprintf("https://%s/cluster-%d", hole, i), i)
	}
	console := func() *ops.Service {
		cfg := &config.Config{StatusInterval: time.Hour, StatusTimeout: 200 * time.Millisecond, StatusConcurrency: 2,
			InstallTimeout: time.Minute, AllowLoopbackClusters: true}
		return ops.NewService(st, cfg, webtest.Logger())
	}
	a, b := console(), console()
	var wg sync.WaitGroup
	for i, s := range []*ops.Service{a, b} {
		wg.Go(func() {
			// b starts a moment after a: long enough for a process that claimed every shard up
			// front, and for a's first checks to have found their clusters down (b then reads
			// regions a has checked: it must still divide them as a did, by the round's list).
			time.Sleep(time.Duration(i) * 300 * time.Millisecond)
			if err := s.Status.SweepFleet(ctx, time.Hour); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if a.Status.ChecksDone()+b.Status.ChecksDone() != regions || a.Status.ChecksDone() == 0 || b.Status.ChecksDone() == 0 {
		t.Fatalf("region checks: a %d, b %d; want %d in all, each region once, by both processes", a.Status.ChecksDone(), b.Status.ChecksDone(), regions)
	}
}

// A sweep after one that found clusters down starts their looks first, in parts of
// several regions; with fewer checkers than a part holds it still gets through them all.
func TestSweepAfterFailuresWithOneChecker(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	hole := blackHole(t)
	const regions = 6
	for i := range regions {
		// One cluster, six credentials: one shard, six looks (parts of several regions).
		downRegion(t, st, fmt.Sprintf("down-%d", i), fmt.Sprintf("https://%s/down", hole), i)
	}
	cfg := &config.Config{StatusInterval: time.Hour, StatusTimeout: 200 * time.Millisecond, StatusConcurrency: 1,
		InstallTimeout: time.Minute, AllowLoopbackClusters: true}
	for round := 1; round <= 2; round++ {
		s := ops.NewService(st, cfg, webtest.Logger())
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := s.Status.Sweep(sctx)
		cancel()
		if err != nil {
			t.Fatalf("sweep %d: %v", round, err)
		}
		if s.Status.ChecksDone() != regions {
			t.Fatalf("sweep %d checked %d regions, want %d", round, s.Status.ChecksDone(), regions)
		}
	}
	targets, err := st.SweepTargets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		if !tg.Failing {
			t.Fatalf("region %s: its cluster never answers, yet it is not failing", tg.ID)
		}
	}
}

// blackHole is a listener that accepts connections and never answers, as the API of a
// cluster that is down; its connections close with the test.
func blackHole(t *testing.T) net.Addr {
	t.Helper()
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := hole.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		hole.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return hole.Addr()
}

// downRegion creates an active region on server, with credentials of its own (token i).
func downRegion(t *testing.T, st *store.Store, name, server string, i int) {
	t.Helper()
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: t-%d\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n", server, i)
	r := &store.Region{Name: name, Kubeconfig: kc, ClusterServer: server, ClusterKey: kube.ClusterKey(server), Status: store.RegionActive}
	if err := st.CreateRegion(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}
