package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/kube"
	"runr.dev/console/ops"
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
		svc, err := cl.Client.CoreV1().Services("knative-serving").Get(ctx, ops.TraefikRelease, metav1.GetOptions{})
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
	Error      string  `json:"error"`
}

// benchSweep measures one status sweep of the real binary over 1,000 regions, 10% of
// them behind a listener that never answers (issue #11, item 4).
func benchSweep(env *Env, rep *Report, o *Options, clusters []*testcluster.Cluster, installed bool) error {
	sec := rep.section("4", "Status sweep")
	ctx := context.Background()
	dnsSrv, err := startDNS()
	if err != nil {
		return err
	}
	defer dnsSrv.Close()
	hole, err := startBlackHole()
	if err != nil {
		return err
	}
	defer hole.Close()
	dbURL, err := env.NewDB("sweep")
	if err != nil {
		return err
	}
	defer env.DropDB(dbURL)
	con, err := env.NewConsole("sweep", dbURL, true, "RUNR_DNS_RESOLVER="+dnsSrv.Addr)
	if err != nil {
		return err
	}
	st, err := OpenStore(dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	const base = "fn.bench.test"
	if err := st.SetSetting(ctx, "base_domain", base); err != nil {
		return err
	}
	lbs := make([]string, len(clusters))
	for i, cl := range clusters {
		if !installed {
			if err := cl.ApplyYAML(ctx, traefikLB); err != nil {
				return err
			}
		}
		if lbs[i], err = lbAddress(ctx, cl); err != nil {
			return err
		}
	}

	n := o.SweepRegions
	every := int(1 / o.DeadFraction) // one region in `every` is behind the black hole
	comps := []string{}
	if installed {
		comps = []string{"prometheus", "loki"}
	}
	fmt.Printf("seeding %d regions (%d behind a listener that never answers, the rest on %d clusters)\n", n, n/every, len(clusters))
	deadCount, live := 0, 0
	kinds := make([]int, n) // -1 dead, else cluster index
	for i := 0; i < n; i++ {
		if i%every == 0 {
			kinds[i] = -1
			deadCount++
		} else {
			kinds[i] = live % len(clusters)
			live++
		}
	}
	if err := parallel(n, 8, func(i int) error {
		name := regionName(i)
		domain := name + "." + base
		s := RegionSeed{Name: name, Location: dataLocation(i), Domain: domain, Components: comps,
			Nodes: []string{"control-plane", "worker-1", "worker-2"}}
		if k := kinds[i]; k < 0 {
			// A cluster of its own (its own credentials) whose API accepts connections and
			// never answers.
			s.Server = hole.URL()
			s.Kubeconfig = kubeconfigFor(name, s.Server, store32(i))
			s.ExternalIP = fmt.Sprintf("127.0.250.%d", 1+i%250)
		} else {
			cl := clusters[k]
			s.Server, s.Kubeconfig, s.ExternalIP = cl.Server, string(cl.Kubeconfig()), lbs[k]
			dnsSrv.Set("dns-check."+domain, lbs[k])
		}
		s.Health = okHealth(domain, s.ExternalIP)
		_, err := seedRegion(ctx, st, s)
		return err
	}); err != nil {
		return fmt.Errorf("seed regions: %w", err)
	}

	args := []string{"status", "sweep", "--json"}
	cmd := exec.Command(env.Runr, args...)
	cmd.Env = con.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	fmt.Println("running `runr status sweep`")
	started := time.Now()
	runErr := cmd.Run()
	wall := time.Since(started)
	var res SweepResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return fmt.Errorf("runr status sweep: %v %v: %s %s", runErr, err, stdout.String(), truncate(stderr.String(), 2000))
	}
	if runErr != nil {
		return fmt.Errorf("runr status sweep: %v: %s", runErr, truncate(stderr.String(), 2000))
	}

	// What the sweep wrote.
	rs, err := st.ListRegions(ctx, store.RegionFilter{}, false)
	if err != nil {
		return err
	}
	checked := 0
	states := map[string]int{}
	// When each region's check was saved, from the process's start: dead ones by second,
	// live ones first and last.
	deadAt := map[int]int{}
	var liveFirst, liveLast time.Duration
	for _, r := range rs {
		if r.CheckedAt != nil && r.CheckedAt.After(started) {
			checked++
			off := r.CheckedAt.Sub(started)
			if r.ClusterServer == hole.URL() {
				deadAt[int(off.Seconds())]++
			} else {
				if liveFirst == 0 || off < liveFirst {
					liveFirst = off
				}
				liveLast = max(liveLast, off)
			}
		}
		h := r.Health.V
		states[fmt.Sprintf("API %s, components %s, external %s", h.API.State, h.Components.State, h.External.State)]++
	}
	var keys []string
	for k := range states {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var stateList []string
	for _, k := range keys {
		stateList = append(stateList, fmt.Sprintf("%d × %s", states[k], k))
	}

	id := sec.cmd("C4", fmt.Sprintf("%s\n# seeded with store.CreateRegion + store.SetRegion, then, with the console's environment:\n%s %s %s",
		benchCmd(o, "sweep"), con.EnvFor(), env.Runr, strings.Join(args, " ")))
	d := time.Duration(res.Seconds * float64(time.Second))
	rss := float64(res.PeakRSSKiB) / 1024
	rep.check("4", fmt.Sprintf("sweep of %d regions (%d never answer)", res.Regions, deadCount), secs(d), "< 15 s", d < 15*time.Second, id)
	rep.check("4", "resident memory of the sweeping process (peak, VmHWM)", fmt.Sprintf("%.0f MiB", rss), "< 300 MB", float64(res.PeakRSSKiB)*1024 < 300e6, id)
	rep.add("4", "regions with a fresh check after the sweep", fmt.Sprintf("%d of %d", checked, len(rs)), id)
	sec.Details = append(sec.Details, fmt.Sprintf("What the sweep recorded: %s.\n\n", strings.Join(stateList, "; ")))
	var secsList []int
	for k := range deadAt {
		secsList = append(secsList, k)
	}
	sort.Ints(secsList)
	var dl []string
	for _, k := range secsList {
		dl = append(dl, fmt.Sprintf("%d between +%d s and +%d s", deadAt[k], k, k+1))
	}
	sec.Details = append(sec.Details, fmt.Sprintf("When the checks were saved, from the start of the process: the %d regions of answering clusters from +%.1f s to +%.1f s; the %d regions whose cluster never answers: %s.\n\n",
		n-deadCount, liveFirst.Seconds(), liveLast.Seconds(), deadCount, strings.Join(dl, ", ")))
	sec.note("Measured inside the real binary: `runr status sweep` (cmd_status.go) runs `ops.Service.Sweep` once, exactly as the console's background loop does, and prints the sweep's duration and its own peak resident memory (VmHWM from /proc/self/status). The whole process took %s from start to exit.", secs(wall))
	sec.note("%d regions in all: every %dth (%d) has a cluster of its own — its own kubeconfig and credentials — whose API server address is one loopback listener (%s) that accepts TCP connections and never answers; it accepted %d connections. The other %d are spread over %d simulated clusters (%s), regions of one cluster sharing its kubeconfig, as regions created from the same kubeconfig do.", len(rs), every, deadCount, hole.URL(), hole.n.Load(), n-deadCount, len(clusters), clusterNames(clusters, installed))
	sec.note("Every region has Serving ready and a function domain under the base domain %s, so the sweep also checks DNS: RUNR_DNS_RESOLVER points at a DNS server in the bench process on %s (it answered %d queries); the system resolver is never asked. Settings are the console's defaults: RUNR_STATUS_TIMEOUT 10 s per cluster look, RUNR_STATUS_CONCURRENCY 64 clusters at once.", base, dnsSrv.Addr, dnsSrv.Queries.Load())
	return nil
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
