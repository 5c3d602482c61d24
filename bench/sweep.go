package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
)

// traefikLB is a LoadBalancer Service where an installed region has its Traefik, for
// clusters that have no Knative install (the simulated cluster gives it an address).
const traefikLB = `apiVersion: v1
kind: Namespace
metadata:
  name: knative-serving
---
apiVersion: v1
kind: Service
metadata:
  name: traefik
  namespace: knative-serving
spec:
  type: LoadBalancer
  selector:
    app.kubernetes.io/name: traefik
  ports:
  - name: web
    port: 80
    targetPort: 8000
`

// lbAddress waits for the address of the Traefik Service of a cluster.
func lbAddress(ctx context.Context, cl *testcluster.Cluster) (string, error) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		svc, err := cl.Client.CoreV1().Services("knative-serving").Get(ctx, kit.TraefikRelease, metav1.GetOptions{})
		if err == nil {
			if a := serviceAddress(svc); a != "" {
				return a, nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return "", fmt.Errorf("cluster %s: Traefik has no load-balancer address", cl.Name)
}

func serviceAddress(s *corev1.Service) string { return kube.ServiceAddress(s) }

// SweepResult is `runr status sweep --json`'s answer.
type SweepResult struct {
	Regions    int     `json:"regions"`
	Seconds    float64 `json:"seconds"`
	PeakRSSKiB int64   `json:"peak_rss_kib"`
	Checked    int64   `json:"checked"`
	Error      string  `json:"error"`
}

// benchSweep measures one status sweep of the real binary over 1,000 regions, 10% of
// them behind a listener that never answers (issue #11, item 4).
func benchSweep(env *Env, rep *Report, o *Options, clusters []*testcluster.Cluster, installed bool) error {
	sec := rep.section("4", "Status sweep")
	ctx := context.Background()
	w := &sweepWorld{clusters: clusters, installed: installed}
	var err error
	if w.dns, err = startDNS(); err != nil {
		return fmt.Errorf("start the DNS server: %w", err)
	}
	defer w.dns.Close()
	if w.hole, err = startBlackHole(); err != nil {
		return fmt.Errorf("start the black hole: %w", err)
	}
	defer w.hole.Close()
	dbURL, st, drop, err := env.NewStore("sweep")
	if err != nil {
		return err
	}
	defer drop()
	con, err := env.NewConsole("sweep", dbURL, true, "RUNR_DNS_RESOLVER="+w.dns.Addr)
	if err != nil {
		return err
	}
	if err := st.SetSetting(ctx, "base_domain", sweepBaseDomain); err != nil {
		return fmt.Errorf("set the base domain: %w", err)
	}
	if err := w.findLoadBalancers(ctx); err != nil {
		return err
	}
	// With -dead-fraction f, one region in 1/f is behind the black hole.
	if err := w.seedRegions(ctx, st, o.SweepRegions, int(1/o.DeadFraction)); err != nil {
		return err
	}
	args := []string{"status", "sweep", "--json"}
	res, started, wall, err := runSweep(env.Runr, con.Env, args)
	if err != nil {
		return err
	}
	rs, err := st.ListRegions(ctx, store.RegionFilter{}, false)
	if err != nil {
		return fmt.Errorf("list the swept regions: %w", err)
	}
	rec := recordOf(rs, started, w.hole.URL())
	id := sec.cmd("C4", fmt.Sprintf("%s\n# seeded with store.CreateRegion + store.SetRegion, then, with the console's environment:\n%s %s %s",
		benchCmd(o, "sweep"), con.EnvFor(), env.Runr, strings.Join(args, " ")))
	reportSweep(rep, sec, w, res, rec, id)
	noteSweep(sec, w, rec, wall)
	return benchFleetSweep(env, rep, o, w)
}

// sweepBaseDomain is the base domain of the sweep's regions.
const sweepBaseDomain = "fn.bench.test"

// sweepWorld is the sweep's regions and what they point at: the simulated clusters with
// their Traefik addresses, the listener that never answers, and the DNS server the sweep
// asks.
type sweepWorld struct {
	clusters  []*testcluster.Cluster
	installed bool // benchmark 5 installed Knative on the clusters
	lbs       []string
	hole      *blackHole
	dns       *DNSServer
	// n regions were seeded, every `every`th of them (dead in all) behind the black hole.
	n, every, dead int
}

// findLoadBalancers waits for each cluster's Traefik address, after giving the clusters
// that have no install a Traefik LoadBalancer Service.
func (w *sweepWorld) findLoadBalancers(ctx context.Context) error {
	w.lbs = make([]string, len(w.clusters))
	for i, cl := range w.clusters {
		if !w.installed {
			if err := cl.ApplyYAML(ctx, traefikLB); err != nil {
				return fmt.Errorf("cluster %s: apply the Traefik Service: %w", cl.Name, err)
			}
		}
		var err error
		if w.lbs[i], err = lbAddress(ctx, cl); err != nil {
			return err
		}
	}
	return nil
}

// seedRegions writes n regions: every `every`th behind the black hole, the others spread
// over the clusters, with their function domains resolving to their cluster's Traefik.
func (w *sweepWorld) seedRegions(ctx context.Context, st *store.Store, n, every int) error {
	comps := []string{}
	if w.installed {
		comps = []string{"prometheus", "loki"}
	}
	fmt.Printf("seeding %d regions (%d behind a listener that never answers, the rest on %d clusters)\n", n, n/every, len(w.clusters))
	var clusterOf []int
	w.n, w.every = n, every
	clusterOf, w.dead = regionClusters(n, every, len(w.clusters))
	if err := parallel(n, 8, func(i int) error {
		_, err := seedRegion(ctx, st, w.regionSeed(i, clusterOf[i], comps))
		return err
	}); err != nil {
		return fmt.Errorf("seed regions: %w", err)
	}
	return nil
}

// regionClusters assigns each of n regions a cluster index, round robin, or -1 to every
// `every`th region, which goes behind the black hole; it counts the latter (dead).
func regionClusters(n, every, clusters int) (clusterOf []int, dead int) {
	clusterOf = make([]int, n)
	live := 0
	for i := range clusterOf {
		if i%every == 0 {
			clusterOf[i] = -1
			dead++
		} else {
			clusterOf[i] = live % clusters
			live++
		}
	}
	return clusterOf, dead
}

// regionSeed is region i on cluster k, or (k < 0) on a cluster of its own — its own
// server path and credentials — whose API accepts connections and never answers.
func (w *sweepWorld) regionSeed(i, k int, comps []string) RegionSeed {
	name := regionName(i)
	domain := name + "." + sweepBaseDomain
	s := RegionSeed{Name: name, Location: dataLocation(i), Domain: domain, Components: comps,
		Nodes: []string{"control-plane", "worker-1", "worker-2"}}
	if k < 0 {
		// A path of its own (as a proxy such as Rancher's names clusters) makes it a
		// cluster of its own, as the fleet's dead clusters would be.
		s.Server = w.hole.URL() + "/k8s/clusters/" + name
		s.Kubeconfig = kubeconfigFor(name, s.Server, store32(i))
		s.ExternalIP = fmt.Sprintf("127.0.250.%d", 1+i%250)
	} else {
		cl := w.clusters[k]
		s.Server, s.Kubeconfig, s.ExternalIP = cl.Server, string(cl.Kubeconfig()), w.lbs[k]
		w.dns.Set("dns-check."+domain, w.lbs[k])
	}
	s.Health = okHealth(domain, s.ExternalIP)
	return s
}

// runSweep runs `runr status sweep --json` (args) with the console's environment and
// returns its answer, when it started and how long the process took.
func runSweep(runr string, env, args []string) (SweepResult, time.Time, time.Duration, error) {
	cmd := exec.Command(runr, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	fmt.Println("running `runr status sweep`")
	started := time.Now()
	runErr := cmd.Run()
	wall := time.Since(started)
	var res SweepResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return res, started, wall, fmt.Errorf("runr status sweep: %v %v: %s %s", runErr, err, stdout.String(), truncate(stderr.String(), 2000))
	}
	if runErr != nil {
		return res, started, wall, fmt.Errorf("runr status sweep: %v: %s", runErr, truncate(stderr.String(), 2000))
	}
	return res, started, wall, nil
}

// sweepRecord is what the sweep wrote to the regions.
type sweepRecord struct {
	regions, checked int
	states           map[string]int // regions by health of their layers
	// When each region's check was saved, from the process's start: dead ones by
	// second, live ones first and last.
	deadAt              map[int]int
	liveFirst, liveLast time.Duration
}

// recordOf reads what the sweep that started at `started` saved of the regions; the dead
// ones are those on the black hole (holeURL).
func recordOf(rs []store.Region, started time.Time, holeURL string) sweepRecord {
	rec := sweepRecord{regions: len(rs), states: map[string]int{}, deadAt: map[int]int{}}
	for _, r := range rs {
		if r.CheckedAt != nil && r.CheckedAt.After(started) {
			rec.checked++
			off := r.CheckedAt.Sub(started)
			if strings.HasPrefix(r.ClusterServer, holeURL+"/") {
				rec.deadAt[int(off.Seconds())]++
			} else {
				if rec.liveFirst == 0 || off < rec.liveFirst {
					rec.liveFirst = off
				}
				rec.liveLast = max(rec.liveLast, off)
			}
		}
		h := r.Health.V
		rec.states[fmt.Sprintf("API %s, components %s, external %s", h.API.State, h.Components.State, h.External.State)]++
	}
	return rec
}

// reportSweep records the sweep's time and memory against the targets, the regions it
// checked, what it recorded and when.
func reportSweep(rep *Report, sec *Section, w *sweepWorld, res SweepResult, rec sweepRecord, id string) {
	d := time.Duration(res.Seconds * float64(time.Second))
	rss := float64(res.PeakRSSKiB) / 1024
	rep.check("4", fmt.Sprintf("sweep of %d regions (%d never answer)", res.Regions, w.dead), secs(d), "< 15 s", d < 15*time.Second, id)
	rep.check("4", "resident memory of the sweeping process (peak, VmHWM)", fmt.Sprintf("%.0f MiB", rss), "< 300 MB", float64(res.PeakRSSKiB)*1024 < 300e6, id)
	rep.add("4", "regions with a fresh check after the sweep", fmt.Sprintf("%d of %d", rec.checked, rec.regions), id)
	var states []string
	for _, k := range slices.Sorted(maps.Keys(rec.states)) {
		states = append(states, fmt.Sprintf("%d × %s", rec.states[k], k))
	}
	sec.Details = append(sec.Details, fmt.Sprintf("What the sweep recorded: %s.\n\n", strings.Join(states, "; ")))
	sec.Details = append(sec.Details, "When the checks were saved, from the start of the process: "+rec.timeline(w)+".\n\n")
}

// timeline says when the sweep saved the checks of the live and of the dead regions.
func (rec sweepRecord) timeline(w *sweepWorld) string {
	var dead []string
	for _, k := range slices.Sorted(maps.Keys(rec.deadAt)) {
		dead = append(dead, fmt.Sprintf("%d between +%d s and +%d s", rec.deadAt[k], k, k+1))
	}
	return fmt.Sprintf("the %d regions of answering clusters from +%.1f s to +%.1f s; the %d regions whose cluster never answers: %s",
		w.n-w.dead, rec.liveFirst.Seconds(), rec.liveLast.Seconds(), w.dead, strings.Join(dead, ", "))
}

// noteSweep explains how the sweep is measured, where its regions point and how it
// resolves their domains.
func noteSweep(sec *Section, w *sweepWorld, rec sweepRecord, wall time.Duration) {
	sec.note("Measured inside the real binary: `runr status sweep` (cli/status.go) runs `ops.Service.Sweep` once, exactly as the console's background loop does, and prints the sweep's duration and its own peak resident memory (VmHWM from /proc/self/status). The whole process took %s from start to exit.", secs(wall))
	sec.note("%d regions in all: every %dth (%d) has a cluster of its own — its own kubeconfig and credentials — whose API server is one loopback listener (%s, a path per cluster) that accepts TCP connections and never answers; it accepted %d connections. The other %d are spread over %d simulated clusters (%s), regions of one cluster sharing its kubeconfig, as regions created from the same kubeconfig do.", rec.regions, w.every, w.dead, w.hole.URL(), w.hole.n.Load(), w.n-w.dead, len(w.clusters), clusterNames(w.clusters, w.installed))
	sec.note("Every region has Serving ready and a function domain under the base domain %s, so the sweep also checks DNS: RUNR_DNS_RESOLVER points at a DNS server in the bench process on %s (it answered %d queries); the system resolver is never asked. Settings are the console's defaults: RUNR_STATUS_CONNECT_TIMEOUT 2 s for a look's connection and TLS handshake, RUNR_STATUS_TIMEOUT 10 s per cluster look, RUNR_STATUS_CONCURRENCY 256 clusters at once.", sweepBaseDomain, w.dns.Addr, w.dns.Queries.Load())
}

func clusterNames(cs []*testcluster.Cluster, installed bool) string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	s := strings.Join(names, ", ")
	if installed {
		return s + ", with Knative, Traefik and the observability stack installed by benchmark 5"
	}
	return s + ", each with a Traefik LoadBalancer Service and nothing else installed"
}
