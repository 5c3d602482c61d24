package status

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"runr.dev/console/engine"
	"runr.dev/console/helm"
	"runr.dev/console/kube"
	"runr.dev/console/ops/data"
	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/redis"
	"runr.dev/console/ops/registry"
	"runr.dev/console/ops/statusblock"
	"runr.dev/console/store"
)

// clusterLook is what one look at a cluster finds, shared by its regions in a sweep.
type clusterLook struct {
	err         error
	took        time.Duration
	version     string
	deployments map[string]*appsv1.Deployment // ns/name
	statefuls   map[string]*appsv1.StatefulSet
	daemons     map[string]*appsv1.DaemonSet
	// releases are the workloads of each deployed Helm release (ns/name), read from the
	// release's own manifest.
	releases map[string][]kube.Workload
	// resources are the operator-managed custom resources of those releases (Prometheus,
	// Alertmanager), by Workload.String().
	resources map[string]*unstructured.Unstructured
	traefik   *corev1.Service
	// address is the region Traefik's external address: its LoadBalancer's, or a node's.
	address    string
	servingOK  bool
	servingMsg string
	servingVer string
	// traefikRBAC says what Traefik's service account may not do with Knative ingresses
	// ("" when it may do all it needs).
	traefikRBAC string
}

func key(ns, name string) string { return ns + "/" + name }

// observe reads what the status check needs from a cluster, within ctx.
func (s *Service) observe(ctx context.Context, r *store.Region) *clusterLook {
	st := &clusterLook{deployments: map[string]*appsv1.Deployment{}, statefuls: map[string]*appsv1.StatefulSet{}, daemons: map[string]*appsv1.DaemonSet{},
		releases: map[string][]kube.Workload{}, resources: map[string]*unstructured.Unstructured{}}
	c, err := s.RegionCluster(r)
	if err != nil {
		st.err = err
		return st
	}
	if st.version, st.took, st.err = s.version(ctx, c); st.err != nil {
		return st
	}
	namespaces := []string{r.OperatorNamespace, r.ServingNamespace, observability.ObservabilityNamespace, registry.Namespace}
	if o := r.DataServices.V.Object; o.Ready() && !o.External() {
		namespaces = append(namespaces, data.DataNamespace)
	}
	if r.DataServices.V.Postgres.Ready() {
		namespaces = append(namespaces, data.CNPGNamespace)
	}
	for _, ns := range namespaces {
		if err := s.observeNamespace(ctx, c, ns, st); err != nil {
			st.err = err
			return st
		}
	}
	managed, err := c.Clientset.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + redis.RedisName})
	if err == nil {
		for i := range managed.Items {
			st.deployments[key(managed.Items[i].Namespace, redis.RedisName)] = &managed.Items[i]
		}
	}
	if svc, err := c.Clientset.CoreV1().Services(r.ServingNamespace).Get(ctx, kit.TraefikRelease, metav1.GetOptions{}); err == nil {
		st.traefik = svc
		st.address = kube.ServiceAddress(svc)
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
			// Host-network Traefik: the region is reached on a node's address.
			st.address, _ = knative.ReadHostNetworkAddress(ctx, c, r.ServingNamespace)
		}
	}
	if o, found, err := c.Get(ctx, kube.GVKKnativeServing, r.ServingNamespace, kit.KnativeServingName); err == nil && found {
		st.servingOK, st.servingMsg = kube.ReadyCondition(o)
		st.servingVer = knative.ServingVersion(o)
		if st.traefikRBAC, err = knative.TraefikKnativeAccess(ctx, c, r.ServingNamespace); err != nil {
			st.traefikRBAC = "not checked: " + kube.Short(err)
		}
	}
	return st
}

// version asks a cluster for its version, and how long it took. The connection and its
// TLS handshake have a short deadline of their own: a cluster that is not there, or
// accepts connections and never speaks, is known as such sooner (it holds a checker
// meanwhile); one that is there has the rest of the look to answer.
func (s *Service) version(ctx context.Context, c *kube.Cluster) (string, time.Duration, error) {
	start := time.Now()
	connect := s.connectTimeout()
	rctx, cancel := context.WithTimeout(ctx, connect)
	err := c.Reach(rctx)
	cancel()
	if err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("no connection within %s", connect)
		}
		return "", 0, err
	}
	v, err := c.ServerVersion(ctx)
	if err != nil {
		return "", 0, err
	}
	return v.GitVersion, time.Since(start), nil
}

// connectTimeout is the deadline of a look's connection: RUNR_STATUS_CONNECT_TIMEOUT
// (2 s when unset), never longer than the look's.
func (s *Service) connectTimeout() time.Duration {
	d := s.Cfg.StatusConnectTimeout
	if d <= 0 {
		d = 2 * time.Second
	}
	return min(d, s.Cfg.StatusTimeout)
}

// observeNamespace reads a namespace's Deployments, StatefulSets, DaemonSets and the
// workloads of its Helm releases.
func (s *Service) observeNamespace(ctx context.Context, c *kube.Cluster, ns string, st *clusterLook) error {
	ds, err := c.Clientset.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range ds.Items {
		st.deployments[key(ns, ds.Items[i].Name)] = &ds.Items[i]
	}
	ss, err := c.Clientset.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range ss.Items {
		st.statefuls[key(ns, ss.Items[i].Name)] = &ss.Items[i]
	}
	dss, err := c.Clientset.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range dss.Items {
		st.daemons[key(ns, dss.Items[i].Name)] = &dss.Items[i]
	}
	return s.observeReleases(ctx, c, ns, st)
}

// observeReleases reads the workloads of the Helm releases deployed in a namespace (from
// a cache while a release keeps its revision) and the operator resources among them.
func (s *Service) observeReleases(ctx context.Context, c *kube.Cluster, ns string, st *clusterLook) error {
	deployed, err := helm.Deployed(ctx, c, ns)
	if err != nil {
		return err
	}
	for name, revision := range deployed {
		ws, err := s.releaseWorkloads(c, ns, name, revision)
		if err != nil {
			return err
		}
		st.releases[key(ns, name)] = ws
		for _, w := range ws {
			gvk, ok := kube.OperatorKinds[w.Kind]
			if !ok {
				continue
			}
			if o, found, err := c.Get(ctx, gvk, w.Namespace, w.Name); err == nil && found {
				st.resources[w.String()] = o
			}
		}
	}
	return nil
}

// componentCheck is one component's verdict from its own workloads.
type componentCheck struct {
	name   string
	ok     bool
	detail string
}

func (st *clusterLook) deployment(ns, name string) (bool, string) {
	return st.verdict(kube.Workload{Kind: "Deployment", Namespace: ns, Name: name})
}

func (st *clusterLook) daemonSet(ns, name string) (bool, string) {
	return st.verdict(kube.Workload{Kind: "DaemonSet", Namespace: ns, Name: name})
}

// release judges a Helm release from the workloads its manifest contains.
func (st *clusterLook) release(ns, name string) func() (bool, string) {
	return func() (bool, string) {
		ws, ok := st.releases[key(ns, name)]
		if !ok {
			return false, "Helm release " + key(ns, name) + " is not deployed"
		}
		checks := make([]func() (bool, string), len(ws))
		for i, w := range ws {
			checks[i] = func() (bool, string) { return st.verdict(w) }
		}
		return all(checks...)
	}
}

// operator judges the Knative Operator: its Helm release, or the Deployments of an
// operator adopted without one.
func (st *clusterLook) operator(ns string) func() (bool, string) {
	if _, ok := st.releases[key(ns, knative.OperatorRelease)]; ok {
		return st.release(ns, knative.OperatorRelease)
	}
	return func() (bool, string) {
		var checks []func() (bool, string)
		for _, d := range st.deployments {
			if d.Namespace == ns && d.Labels["app.kubernetes.io/name"] == "knative-operator" {
				name := d.Name
				checks = append(checks, func() (bool, string) { return st.deployment(ns, name) })
			}
		}
		if len(checks) == 0 {
			return false, "no Knative Operator Deployment in " + ns
		}
		return all(checks...)
	}
}

func all(checks ...func() (bool, string)) (bool, string) {
	var bad []string
	for _, c := range checks {
		if ok, d := c(); !ok {
			bad = append(bad, d)
		}
	}
	if len(bad) > 0 {
		return false, strings.Join(bad, "; ")
	}
	return true, "ready"
}

// components judges each installed component from its own Deployments and DaemonSets,
// not only from a custom resource's Ready.
func (s *Service) components(r *store.Region, st *clusterLook) []componentCheck {
	var out []componentCheck
	add := func(name string, ok bool, detail string) { out = append(out, componentCheck{name, ok, detail}) }
	// A component whose last job failed is not ok, whatever else runs: the region must not
	// read ok without it.
	failed := func(name, message string) { add(name, false, lastJobFailed(message)) }
	if r.ServingStatus == store.ComponentReady || r.ServingStatus == store.ComponentError {
		ok, d := all(st.operator(r.OperatorNamespace),
			func() (bool, string) {
				if !st.servingOK {
					return false, "KnativeServing is not Ready: " + st.servingMsg
				}
				return true, ""
			},
			func() (bool, string) {
				if st.traefikRBAC != "" {
					return false, st.traefikRBAC
				}
				return true, ""
			})
		add("serving", ok, d)
		ok, d = st.release(r.ServingNamespace, kit.TraefikRelease)()
		add("traefik", ok, d)
	}
	switch {
	case r.RegistryMode == store.RegistryInternal && r.RegistryStatus == store.ComponentReady:
		ok, d := all(st.release(registry.Namespace, registry.ZotRelease),
			func() (bool, string) { return st.daemonSet(registry.Namespace, registry.MirrorDaemonSet) })
		add("registry", ok, d)
	case r.RegistryMode == store.RegistryInternal && r.RegistryStatus == store.ComponentError:
		failed("registry", r.RegistryMessage)
	}
	switch {
	case r.RedisMode == store.RedisManaged && r.RedisStatus == store.ComponentReady:
		ok, d := st.deployment(r.Name, redis.RedisName)
		add("redis", ok, d)
	case r.RedisMode == store.RedisManaged && r.RedisStatus == store.ComponentError:
		failed("redis", r.RedisMessage)
	}
	switch o := r.DataServices.V.Object; {
	case o.Ready():
		ok, d := st.release(data.DataNamespace, data.SeaweedFSRelease)()
		add("object store", ok, d)
	case o.Status == store.ComponentError:
		failed("object store", o.Message)
	}
	switch p := r.DataServices.V.Postgres; {
	case p.Ready():
		ok, d := st.release(data.CNPGNamespace, data.CNPGRelease)()
		add("postgres", ok, d)
	case p.Status == store.ComponentError:
		failed("postgres", p.Message)
	}
	for _, c := range []struct {
		component string
		releases  []string
	}{{"prometheus", []string{observability.PrometheusRelease}}, {"loki", []string{observability.LokiRelease}}, {"tracing", []string{observability.TempoRelease, observability.OtelRelease}}} {
		switch cs := r.Component(c.component); cs.Status {
		case store.ComponentReady:
		case store.ComponentError:
			failed(c.component, cs.Message)
			continue
		default:
			continue
		}
		checks := make([]func() (bool, string), len(c.releases))
		for i, rel := range c.releases {
			checks[i] = st.release(observability.ObservabilityNamespace, rel)
		}
		ok, d := all(checks...)
		add(c.component, ok, d)
	}
	if r.Component("agent").Status == store.ComponentReady || r.Component("agent").Status == store.ComponentConnected || r.Component("agent").Status == store.ComponentDisconnected {
		ok, d := st.deployment(observability.ObservabilityNamespace, observability.AgentName)
		// A new agent has three minutes to report before its silence counts.
		if ok && (r.AgentLastSeenAt == nil || time.Since(*r.AgentLastSeenAt) > 3*time.Minute) && time.Since(r.Component("agent").UpdatedAt) > 3*time.Minute {
			ok, d = false, "the runr-agent runs but has not reported to the console for "+ago(r.AgentLastSeenAt)
		}
		add("agent", ok, d)
	} else if a := r.Component("agent"); a.Status == store.ComponentError {
		failed("agent", a.Message)
	}
	return out
}

// lastJobFailed says that a component's last job failed, and why.
func lastJobFailed(message string) string {
	if message == "" {
		return "its last job failed: Retry it"
	}
	return "its last job failed: " + message
}

func ago(t *time.Time) string {
	if t == nil {
		return "ever (never connected)"
	}
	return time.Since(*t).Round(time.Second).String()
}

// CheckRegion runs the three layers of a region's status check against a cluster look.
func (s *Service) checkRegion(ctx context.Context, r *store.Region, st *clusterLook, base string) store.CheckUpdate {
	now := time.Now().UTC()
	h := r.Health.V
	u := store.CheckUpdate{CheckedAt: now}
	if st.err != nil {
		h.API = store.HealthLayer{State: store.HealthDown, Reason: "the API does not answer: " + kube.Short(st.err), CheckedAt: now}
		h.Components = store.HealthLayer{State: store.HealthUnknown, Reason: "not checked: the cluster's API does not answer", CheckedAt: now}
		h.External = store.HealthLayer{State: store.HealthUnknown, Reason: "not checked: the cluster's API does not answer", CheckedAt: now}
		u.Health = h
		return u
	}
	h.Failures, h.NextCheck = 0, time.Time{}
	h.API = store.HealthLayer{State: store.HealthOK, Reason: fmt.Sprintf("answered in %d ms (%s)", st.took.Milliseconds(), st.version), CheckedAt: now}
	u.K8sVersion = store.Ptr(st.version)

	checks := s.components(r, st)
	items := map[string]string{}
	var bad []string
	for _, c := range checks {
		items[c.name] = c.detail
		if !c.ok {
			bad = append(bad, c.name+": "+c.detail)
		}
	}
	switch {
	case len(checks) == 0:
		h.Components = store.HealthLayer{State: store.HealthUnknown, Reason: "nothing installed yet: install the registry and Knative Serving", CheckedAt: now}
	case len(bad) > 0:
		sort.Strings(bad)
		h.Components = store.HealthLayer{State: store.HealthDegraded, Reason: strings.Join(bad, "; "), CheckedAt: now, Items: items}
	default:
		names := make([]string, len(checks))
		for i, c := range checks {
			names[i] = c.name
		}
		h.Components = store.HealthLayer{State: store.HealthOK, Reason: "ready: " + strings.Join(names, ", "), CheckedAt: now, Items: items}
	}

	// The external path: Traefik's address, then DNS.
	ext := st.address
	if ext != r.ExternalIP && (ext != "" || r.ServingStatus == store.ComponentReady) {
		u.ExternalIP = store.Ptr(ext)
	}
	domain := domains.FunctionDomain(r, base)
	switch {
	case r.ServingStatus != store.ComponentReady:
		h.External = store.HealthLayer{State: store.HealthUnknown, Reason: "Knative Serving is not installed: no external path yet", CheckedAt: now}
	case ext == "":
		h.External = store.HealthLayer{State: store.HealthDown, Reason: "Traefik's Service " + r.ServingNamespace + "/" + kit.TraefikRelease + " has no external address: does the cluster have a load-balancer implementation (else install Serving with host-network Traefik)?", CheckedAt: now}
	case domain == "":
		h.External = store.HealthLayer{State: store.HealthUnknown, Reason: "external address " + ext + "; no function domain yet: set the platform's base domain", CheckedAt: now}
	default:
		ok, reason, err := (&domains.Resolver{Server: s.Cfg.DNSResolver}).DNSCheck(ctx, domain, ext)
		switch {
		case err != nil:
			// The resolver's address and the library's message go to the log only.
			s.Log.Warn("status: DNS check", "region", r.Name, "domain", domain, "err", err)
			h.External = store.HealthLayer{State: store.HealthUnknown, Reason: "external address " + ext + "; the DNS check failed (" + kube.DNSCause(err) + "); the console's log has the details", CheckedAt: now}
		case ok:
			h.External = store.HealthLayer{State: store.HealthOK, Reason: reason, CheckedAt: now}
		default:
			h.External = store.HealthLayer{State: store.HealthDegraded, Reason: reason, CheckedAt: now}
		}
		u.DNSResolved = store.Ptr(ok)
	}
	u.Health = h
	return u
}

// Sweep checks every active region once: bounded concurrency, a deadline per region,
// one look per cluster, and a circuit breaker that backs off from clusters that do not
// answer so that they never delay the others.
func (s *Service) Sweep(ctx context.Context) error {
	return s.sweep(ctx, nil, func(context.Context, string) bool { return true })
}

// SweepFleet checks the regions (whatever their status) of the shards of the sweep this process claims for
// this interval (every): console processes sweeping at once share the shards, and each
// region is checked once per interval whatever their number.
func (s *Service) SweepFleet(ctx context.Context, every time.Duration) error {
	round := func(ctx context.Context, targets []store.SweepTarget) error {
		return s.sweepRound(ctx, targets, every)
	}
	return s.sweep(ctx, round, func(ctx context.Context, part string) bool {
		return s.claimTask(ctx, "sweep/"+part, every)
	})
}

// sweepRound sets the targets' failing flags to those of the round: the clusters failing
// when the round's first process read the regions. A process that reads them after another
// checked some would otherwise divide them differently and check a region twice.
func (s *Service) sweepRound(ctx context.Context, targets []store.SweepTarget, every time.Duration) error {
	var failing []string
	seen := map[string]bool{}
	for _, t := range targets {
		if t.Failing && !seen[t.ClusterKey] {
			seen[t.ClusterKey] = true
			failing = append(failing, t.ClusterKey)
		}
	}
	keys, err := s.Store.ClaimSweepRound(ctx, s.Owner(), every, failing)
	if err != nil {
		return err
	}
	inRound := map[string]bool{}
	for _, k := range keys {
		inRound[k] = true
	}
	for i := range targets {
		targets[i].Failing = inRound[targets[i].ClusterKey]
	}
	return nil
}

// claimTask claims a fleet task for this interval (false: another process has it).
func (s *Service) claimTask(ctx context.Context, task string, every time.Duration) bool {
	ok, err := s.Store.ClaimFleetTask(ctx, task, s.Owner(), every)
	if err != nil && ctx.Err() == nil {
		s.Log.Warn("fleet task: claim", "task", task, "err", err)
	}
	return ok
}

// SweepShards is how many parts the fleet's clusters are divided into: console processes
// claim the parts of each interval (store.ClaimFleetTask), so that whatever their number
// each cluster is looked at once per interval.
const SweepShards = 64

func shardOf(clusterKey string) int {
	h := fnv.New32a()
	h.Write([]byte(clusterKey))
	return int(h.Sum32() % SweepShards)
}

// sweep checks the clusters of the shards take accepts, StatusConcurrency at a time. A
// shard is claimed only when a checker is free for its first cluster, so that processes
// sweeping together share the shards by how fast each gets through them (a process that
// claimed every shard up front would leave the others nothing). The looks at clusters
// that failed last time go first (feedSweep); round, if any, settles which those are.
func (s *Service) sweep(ctx context.Context, round func(context.Context, []store.SweepTarget) error,
	take func(ctx context.Context, part string) bool) error {
	targets, err := s.Store.SweepTargets(ctx)
	if err != nil {
		return err
	}
	if round != nil {
		if err := round(ctx, targets); err != nil {
			return err
		}
	}
	base, err := s.Store.BaseDomain(ctx)
	if err != nil {
		return err
	}
	p := partsOf(targets)
	work := make(chan clusterCheck)
	// A free checker is a slot: a look is handed out with one.
	checkers := max(1, s.Cfg.StatusConcurrency)
	slots := semaphore.NewWeighted(int64(checkers))
	looks := newSweepLooks()
	saver := s.newCheckSaver(ctx)
	var wg sync.WaitGroup
	for range checkers {
		wg.Go(func() {
			for w := range work {
				s.checkCluster(ctx, looks, saver.save, w.key, w.regions, base)
				slots.Release(1)
			}
		})
	}
	err = s.feedSweep(ctx, p, take, slots, work)
	close(work)
	wg.Wait()
	saver.close()
	if err != nil {
		return err
	}
	return ctx.Err()
}

// sweepParts is the sweep's regions by shard: those on clusters that failed their last
// check, and the others.
type sweepParts struct {
	failing, others [SweepShards][]string
}

// partsOf puts each region in its shard. A cluster of many regions is looked at once per
// sweepLook regions, and its parts go to shards of their own: processes sweeping together
// share it too.
func partsOf(targets []store.SweepTarget) *sweepParts {
	failed := map[string]bool{}
	for _, t := range targets {
		if t.Failing {
			failed[t.ClusterKey] = true
		}
	}
	p := &sweepParts{}
	seen := map[string]int{}
	for _, t := range targets {
		n := seen[t.ClusterKey]
		seen[t.ClusterKey] = n + 1
		shard := shardOf(t.ClusterKey)
		if n >= sweepLook {
			shard = shardOf(fmt.Sprintf("%s#%d", t.ClusterKey, n/sweepLook))
		}
		if failed[t.ClusterKey] {
			p.failing[shard] = append(p.failing[shard], t.ID)
		} else {
			p.others[shard] = append(p.others[shard], t.ID)
		}
	}
	return p
}

// feedSweep hands the looks of the parts this process takes to the checkers: first those
// at clusters that failed last time, then the others, those of shards with failures
// first. A look at a cluster that does not answer holds its checker
// until the deadline, so one started last would end the sweep that much later (longest
// first). The failing regions of a shard are parts of their own, failingPart at a time,
// each taken only when as many checkers are free: processes sweeping together share
// them evenly, none taking more than it can start while another has checkers idle.
func (s *Service) feedSweep(ctx context.Context, p *sweepParts, take func(ctx context.Context, part string) bool,
	slots *semaphore.Weighted, work chan<- clusterCheck) error {
	failingIn := make([]int, SweepShards)
	for i := range p.failing {
		failingIn[i] = len(p.failing[i])
	}
	order := shardOrder(failingIn, shardOf(s.Owner()))
	for _, shard := range order {
		for k := 0; k*failingPart < failingIn[shard]; k++ {
			part := p.failing[shard][k*failingPart : min((k+1)*failingPart, failingIn[shard])]
			// (Never more slots than there are checkers: such an Acquire would wait forever.)
			n := int64(min(len(part), max(1, s.Cfg.StatusConcurrency)))
			if err := slots.Acquire(ctx, n); err != nil {
				return err
			}
			if !take(ctx, fmt.Sprintf("%d/failing/%d", shard, k)) {
				slots.Release(n)
				continue
			}
			if err := s.feedLooks(ctx, part, n, slots, work); err != nil {
				return err
			}
		}
	}
	for _, shard := range order {
		if len(p.others[shard]) > 0 && take(ctx, strconv.Itoa(shard)) {
			if err := s.feedLooks(ctx, p.others[shard], 0, slots, work); err != nil {
				return err
			}
		}
	}
	return nil
}

// failingPart is how many regions on failing clusters one part of the sweep holds.
const failingPart = 4

// feedLooks reads the regions of ids (a process holds the parts it works on, not the
// fleet) and hands their cluster looks to the checkers, each with a slot: held slots are
// taken already, the others are waited for.
func (s *Service) feedLooks(ctx context.Context, ids []string, held int64, slots *semaphore.Weighted, work chan<- clusterCheck) error {
	regions, err := s.Store.RegionsWithSecrets(ctx, ids)
	if err != nil {
		slots.Release(held)
		return err
	}
	looks := regionsByCluster(regions)
	if extra := held - int64(len(looks)); extra > 0 {
		slots.Release(extra) // regions of one cluster share a look
	}
	for i, c := range looks {
		if int64(i) >= held {
			if err := slots.Acquire(ctx, 1); err != nil {
				return err
			}
		}
		select {
		case work <- c:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// shardOrder is the order in which a process offers to take the shards: those with the
// most regions on clusters that failed last time first (see feedSweep), then round from
// offset, the process's own start, so that processes sweeping together do not all ask
// for the same shard.
func shardOrder(failingIn []int, offset int) []int {
	order := make([]int, len(failingIn))
	for i := range order {
		order[i] = (offset + i) % len(failingIn)
	}
	sort.SliceStable(order, func(i, j int) bool { return failingIn[order[i]] > failingIn[order[j]] })
	return order
}

// sweepLook is the most regions one look at a cluster serves (regions of one cluster share
// its server; a cluster with more is looked at once per this many).
const sweepLook = 100

// clusterCheck is one look at a cluster: the regions that share its server and credentials.
type clusterCheck struct {
	key     string
	regions []*store.Region
}

// regionsByCluster groups regions by cluster and credentials, in the order they come, at
// most sweepLook regions to a look; each further look at a cluster has a breaker key of
// its own (#2, #3, …), so that each part's regions are told when their cluster fails.
func regionsByCluster(regions []store.Region) []clusterCheck {
	var out []clusterCheck
	index, parts := map[string]int{}, map[string]int{}
	for i := range regions {
		k := regions[i].ClusterKey + "|" + kit.ShortHash(regions[i].Kubeconfig)
		j, ok := index[k]
		if ok && len(out[j].regions) >= sweepLook {
			ok = false
		}
		if !ok {
			j = len(out)
			index[k] = j
			parts[k]++
			key := k
			if parts[k] > 1 {
				key = fmt.Sprintf("%s#%d", k, parts[k])
			}
			out = append(out, clusterCheck{key: key})
		}
		out[j].regions = append(out[j].regions, &regions[i])
	}
	return out
}

// checkCluster checks the regions of one cluster with one look at it (the sweep's, when
// another part of the sweep looked at the cluster already).
func (s *Service) checkCluster(ctx context.Context, looks *sweepLooks, save func([]tenantCheck), k string, rs []*store.Region, base string) {
	if !s.breaker.allow(k) {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, s.Cfg.StatusTimeout)
	st := looks.look(cctx, rs[0], func() *clusterLook { return s.observe(cctx, rs[0]) })
	if st.err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		st.err = fmt.Errorf("no answer within %s", s.Cfg.StatusTimeout)
	}
	cancel()
	var failures int
	var next time.Time
	if st.err != nil {
		failures, next = s.breaker.fail(k)
		s.ForgetCluster([]byte(rs[0].Kubeconfig))
	} else {
		s.breaker.ok(k)
	}
	checks := make([]tenantCheck, len(rs))
	// The regions of a look are checked side by side (each asks DNS), then saved together.
	var wg sync.WaitGroup
	sem := make(chan struct{}, regionChecksAtOnce)
	for i, r := range rs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			// A tenant-owned region is checked in its tenant's walls (Tenancy module).
			dctx, cancel := context.WithTimeout(store.WithTenant(ctx, r.Tenant()), s.Cfg.StatusTimeout)
			u := s.checkRegion(dctx, r, st, base)
			cancel()
			if st.err != nil {
				u.Health.Failures, u.Health.NextCheck = failures, next
				u.Health.API.Reason += fmt.Sprintf(" (%d failed check(s) in a row; next check at %s)", failures, next.Format("15:04:05"))
			}
			checks[i] = tenantCheck{tenant: r.Tenant(), check: store.RegionCheck{ID: r.ID, CheckUpdate: u}}
		})
	}
	wg.Wait()
	save(checks)
	if st.err == nil {
		for _, r := range rs {
			s.followBaseDomain(store.WithTenant(ctx, r.Tenant()), r, base)
			s.followBlockHosts(store.WithTenant(ctx, r.Tenant()), r)
		}
	}
}

// regionChecksAtOnce is how many regions of one cluster look are checked at once.
const regionChecksAtOnce = 8

// tenantCheck is a region's check and the tenant whose walls it is saved in.
type tenantCheck struct {
	tenant string
	check  store.RegionCheck
}

// saveChecks saves checks, one statement per tenant (each in its tenant's walls).
func (s *Service) saveChecks(ctx context.Context, checks []tenantCheck) {
	byTenant := map[string][]store.RegionCheck{}
	for _, c := range checks {
		byTenant[c.tenant] = append(byTenant[c.tenant], c.check)
	}
	for tenant, cs := range byTenant {
		wctx, cancel := context.WithTimeout(store.WithTenant(context.WithoutCancel(ctx), tenant), 5*time.Second)
		saved, err := s.Store.SaveChecks(wctx, cs)
		cancel()
		if err != nil {
			s.Log.Warn("status: save", "regions", len(cs), "first", cs[0].ID, "err", err)
		}
		s.checksDone.Add(int64(len(saved)))
	}
}

// CheckNow checks one region at once (on demand), ignoring the breaker's backoff.
func (s *Service) CheckNow(ctx context.Context, id string) error {
	r, err := s.Store.RegionByID(ctx, id)
	if err != nil {
		return err
	}
	base, err := s.Store.BaseDomain(ctx)
	if err != nil {
		return err
	}
	k := r.ClusterKey + "|" + kit.ShortHash(r.Kubeconfig)
	s.breaker.ok(k)
	s.checkCluster(ctx, nil, func(cs []tenantCheck) { s.saveChecks(ctx, cs) }, k, []*store.Region{r}, base)
	return nil
}

// followBaseDomain gives a region with Serving and no function domain the base domain's,
// once a base domain is set.
func (s *Service) followBaseDomain(ctx context.Context, r *store.Region, base string) {
	if base == "" || r.ServingStatus != store.ComponentReady || r.Settings.V.KnativeDomain != "" {
		return
	}
	if _, err := s.Store.ActiveJob(ctx, r.ID, domains.KindSetDomain); err == nil {
		return
	}
	if _, err := s.Enqueue(ctx, engine.Request{Kind: domains.KindSetDomain, Title: "Function domain of " + r.Name, Subject: r.ID,
		Params: domains.DomainParams{Domain: r.Name + "." + base}, CreatedBy: "status check"}); err != nil {
		s.Log.Warn("status: queue the function domain", "region", r.Name, "err", err)
	}
}

// followBlockHosts applies the status block of a region that is not active again when
// the hosts it answers on changed (a Knative Service or DomainMapping came or went).
func (s *Service) followBlockHosts(ctx context.Context, r *store.Region) {
	if r.Status == store.RegionActive || r.ServingStatus != store.ComponentReady {
		return
	}
	c, err := s.RegionCluster(r)
	if err != nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, s.Cfg.StatusTimeout)
	defer cancel()
	hosts, err := statusblock.RegionHosts(cctx, c, r)
	if err != nil || hosts.Empty() {
		return
	}
	applied, err := statusblock.AppliedRule(cctx, c, r)
	if err != nil || applied == "" || applied == statusblock.BlockRule(hosts) {
		// No block yet: the status change's own job, or reconcile, applies it.
		return
	}
	if _, err := s.Store.ActiveJob(ctx, r.ID, statusblock.KindRegionStatus); err == nil {
		return
	}
	if _, err := s.Enqueue(ctx, engine.Request{Kind: statusblock.KindRegionStatus, Title: "Status block of " + r.Name + ": its hosts changed", Subject: r.ID,
		CreatedBy: "status check"}); err != nil {
		s.Log.Warn("status: queue the status block", "region", r.Name, "err", err)
	}
}

// RunBackground runs the status sweep every interval until ctx ends.
func (s *Service) RunBackground(ctx context.Context) {
	every := s.Cfg.StatusInterval
	// Processes look four times per interval whether a part of the sweep is due: the
	// claims make each part run once per interval, whichever process is first.
	t := time.NewTicker(max(every/4, 100*time.Millisecond))
	defer t.Stop()
	claim := func(ctx context.Context, task string) bool { return s.claimTask(ctx, task, every) }
	for {
		start := time.Now()
		err := s.SweepFleet(ctx, every)
		if err != nil && ctx.Err() == nil {
			s.Log.Warn("status sweep", "err", err)
		} else if ctx.Err() == nil {
			s.Log.Debug("status sweep done", "took", time.Since(start))
		}
		if claim(ctx, "periodic") {
			s.Periodic(ctx)
		}
		if s.claimTask(ctx, "history-retention", 24*time.Hour) {
			s.PruneHistory(ctx)
		}
		select {
		case <-ctx.Done():
			s.checks.Wait()
			return
		case <-t.C:
		}
	}
}

// PruneHistory is the daily retention of the regions' history: the agent's events, pod
// sessions and metric snapshots older than each active region's retention go.
func (s *Service) PruneHistory(ctx context.Context) {
	n, err := s.Store.PruneRegionHistory(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.Log.Warn("history retention", "err", err)
		}
		return
	}
	s.Log.Info("history retention: deleted the reports past each active region's retention",
		"events", n.Events, "pod_sessions", n.Sessions, "metric_snapshots", n.Snapshots)
}

// CheckSoon checks one region in the background, at once (on demand); the background
// loop waits for such checks when the console stops.
func (s *Service) CheckSoon(id string) {
	s.checks.Add(1)
	go func() {
		defer s.checks.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 2*s.Cfg.StatusTimeout)
		defer cancel()
		if err := s.CheckNow(ctx, id); err != nil {
			s.Log.Warn("status check on demand", "region", id, "err", err)
		}
	}()
}

// Periodic runs the checks that complete moves and domain migrations (after each sweep).
func (s *Service) Periodic(ctx context.Context) {
	for _, f := range s.periodics {
		f(ctx)
	}
}

// ChecksDone is how many region checks this process recorded since it started.
func (s *Service) ChecksDone() int64 { return s.checksDone.Load() }

// Service checks the regions: the periodic sweep of the fleet, shared between the
// console's processes, and the checks on demand.
type Service struct {
	*kit.Kit
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

// New builds the status checks; periodics run after every sweep.
func New(k *kit.Kit, periodics ...func(context.Context)) *Service {
	return &Service{Kit: k, breaker: newBreaker(), periodics: periodics}
}
