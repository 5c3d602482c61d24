package ops_test

import (
	"context"
	"fmt"
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
		go func() { s.RunBackground(runCtx); done <- struct{}{} }()
	}
	time.Sleep(4*interval + interval/2)
	stop()
	<-done
	<-done
	elapsed := time.Since(started)
	checks := a.ChecksDone() + b.ChecksDone()
	// Once per interval per region: at most one more interval than elapsed, never twice.
	maxChecks := int64(regions * (int(elapsed/interval) + 1))
	if checks < regions*3 || checks > maxChecks {
		t.Fatalf("%d region checks by two consoles in %s (a %d, b %d), want %d to %d: each region once per interval",
			checks, elapsed.Round(time.Millisecond), a.ChecksDone(), b.ChecksDone(), regions*3, maxChecks)
	}
}
