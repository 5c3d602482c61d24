package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	traefik     *corev1.Service
	servingOK   bool
	servingMsg  string
	servingVer  string
}

func key(ns, name string) string { return ns + "/" + name }

// observe reads what the status check needs from a cluster, within ctx.
func (s *Service) observe(ctx context.Context, r *store.Region) *clusterLook {
	st := &clusterLook{deployments: map[string]*appsv1.Deployment{}, statefuls: map[string]*appsv1.StatefulSet{}, daemons: map[string]*appsv1.DaemonSet{}}
	c, err := s.RegionCluster(r)
	if err != nil {
		st.err = err
		return st
	}
	start := time.Now()
	// The first question has half the deadline: a cluster that accepts connections but
	// never answers is known as such sooner.
	vctx, cancel := context.WithTimeout(ctx, s.Cfg.StatusTimeout/2)
	v, err := c.ServerVersion(vctx)
	cancel()
	if err != nil {
		if vctx.Err() != nil {
			err = fmt.Errorf("no answer within %s", s.Cfg.StatusTimeout/2)
		}
		st.err = err
		return st
	}
	st.took = time.Since(start)
	st.version = v.GitVersion
	for _, ns := range []string{r.OperatorNamespace, r.ServingNamespace, ObservabilityNamespace, RegistryNamespace} {
		ds, err := c.Clientset.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			st.err = err
			return st
		}
		for i := range ds.Items {
			st.deployments[key(ns, ds.Items[i].Name)] = &ds.Items[i]
		}
		ss, err := c.Clientset.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			st.err = err
			return st
		}
		for i := range ss.Items {
			st.statefuls[key(ns, ss.Items[i].Name)] = &ss.Items[i]
		}
		dss, err := c.Clientset.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			st.err = err
			return st
		}
		for i := range dss.Items {
			st.daemons[key(ns, dss.Items[i].Name)] = &dss.Items[i]
		}
	}
	redis, err := c.Clientset.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + RedisName})
	if err == nil {
		for i := range redis.Items {
			st.deployments[key(redis.Items[i].Namespace, RedisName)] = &redis.Items[i]
		}
	}
	if svc, err := c.Clientset.CoreV1().Services(r.ServingNamespace).Get(ctx, TraefikRelease, metav1.GetOptions{}); err == nil {
		st.traefik = svc
	}
	if o, found, err := c.Get(ctx, GVKKnativeServing, r.ServingNamespace, KnativeServingName); err == nil && found {
		st.servingOK, st.servingMsg = ReadyCondition(o)
		st.servingVer = servingVersion(o)
	}
	return st
}

// componentCheck is one component's verdict from its own workloads.
type componentCheck struct {
	name   string
	ok     bool
	detail string
}

func (st *clusterLook) deployment(ns, name string) (bool, string) {
	d, ok := st.deployments[key(ns, name)]
	if !ok {
		return false, "Deployment " + key(ns, name) + " is missing"
	}
	ready, detail := DeploymentReady(d)
	return ready, "Deployment " + key(ns, name) + ": " + detail
}

func (st *clusterLook) statefulSet(ns, name string) (bool, string) {
	s, ok := st.statefuls[key(ns, name)]
	if !ok {
		return false, "StatefulSet " + key(ns, name) + " is missing"
	}
	want := int32(1)
	if s.Spec.Replicas != nil {
		want = *s.Spec.Replicas
	}
	return s.Status.ReadyReplicas >= want, fmt.Sprintf("StatefulSet %s: %d/%d ready", key(ns, name), s.Status.ReadyReplicas, want)
}

func (st *clusterLook) daemonSet(ns, name string) (bool, string) {
	d, ok := st.daemons[key(ns, name)]
	if !ok {
		return false, "DaemonSet " + key(ns, name) + " is missing"
	}
	ready, detail := DaemonSetIsReady(d)
	return ready, "DaemonSet " + key(ns, name) + ": " + detail
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
	if r.ServingStatus == "ready" || r.ServingStatus == "error" {
		ok, d := all(
			func() (bool, string) { return st.deployment(r.OperatorNamespace, "knative-operator") },
			func() (bool, string) {
				if !st.servingOK {
					return false, "KnativeServing is not Ready: " + st.servingMsg
				}
				return true, ""
			})
		add("serving", ok, d)
		ok, d = st.deployment(r.ServingNamespace, TraefikRelease)
		add("traefik", ok, d)
	}
	if r.RegistryMode == "internal" && r.RegistryStatus == "ready" {
		ok, d := all(func() (bool, string) { return st.deployment(RegistryNamespace, ZotRelease) },
			func() (bool, string) { return st.daemonSet(RegistryNamespace, MirrorDaemonSet) })
		add("registry", ok, d)
	}
	if r.RedisMode == "managed" && r.RedisStatus == "ready" {
		ok, d := st.deployment(r.Name, RedisName)
		add("redis", ok, d)
	}
	if r.Component("prometheus").Status == "ready" {
		ok, d := all(func() (bool, string) { return st.deployment(ObservabilityNamespace, PrometheusRelease+"-operator") },
			func() (bool, string) { return st.statefulSet(ObservabilityNamespace, "prometheus-"+PrometheusRelease) })
		add("prometheus", ok, d)
	}
	if r.Component("loki").Status == "ready" {
		ok, d := all(func() (bool, string) { return st.statefulSet(ObservabilityNamespace, LokiRelease) },
			func() (bool, string) { return st.daemonSet(ObservabilityNamespace, LokiRelease+"-promtail") })
		add("loki", ok, d)
	}
	if r.Component("agent").Status == "ready" || r.Component("agent").Status == "connected" || r.Component("agent").Status == "disconnected" {
		ok, d := st.deployment(ObservabilityNamespace, AgentName)
		// A new agent has three minutes to report before its silence counts.
		if ok && (r.AgentLastSeenAt == nil || time.Since(*r.AgentLastSeenAt) > 3*time.Minute) && time.Since(r.Component("agent").UpdatedAt) > 3*time.Minute {
			ok, d = false, "the runr-agent runs but has not reported to the console for "+ago(r.AgentLastSeenAt)
		}
		add("agent", ok, d)
	}
	return out
}

func ago(t *time.Time) string {
	if t == nil {
		return "ever (never connected)"
	}
	return time.Since(*t).Round(time.Second).String()
}

// CheckRegion runs the three layers of a region's status check against a cluster look.
func (s *Service) checkRegion(ctx context.Context, r *store.Region, st *clusterLook, base string) (store.Health, map[string]any) {
	now := time.Now().UTC()
	h := r.Health.V
	fields := map[string]any{"checked_at": now}
	if st.err != nil {
		h.API = store.HealthLayer{State: "down", Reason: "the API does not answer: " + short(st.err), CheckedAt: now}
		h.Components = store.HealthLayer{State: "unknown", Reason: "not checked: the cluster's API does not answer", CheckedAt: now}
		h.External = store.HealthLayer{State: "unknown", Reason: "not checked: the cluster's API does not answer", CheckedAt: now}
		return h, fields
	}
	h.Failures, h.NextCheck = 0, time.Time{}
	h.API = store.HealthLayer{State: "ok", Reason: fmt.Sprintf("answered in %d ms (%s)", st.took.Milliseconds(), st.version), CheckedAt: now}
	fields["k8s_version"] = st.version

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
		h.Components = store.HealthLayer{State: "unknown", Reason: "nothing installed yet: install the registry and Knative Serving", CheckedAt: now}
	case len(bad) > 0:
		sort.Strings(bad)
		h.Components = store.HealthLayer{State: "degraded", Reason: strings.Join(bad, "; "), CheckedAt: now, Items: items}
	default:
		names := make([]string, len(checks))
		for i, c := range checks {
			names[i] = c.name
		}
		h.Components = store.HealthLayer{State: "ok", Reason: "ready: " + strings.Join(names, ", "), CheckedAt: now, Items: items}
	}

	// The external path: Traefik's address, then DNS.
	ext := ""
	if st.traefik != nil {
		ext = ServiceAddress(st.traefik)
	}
	if ext != r.ExternalIP && (ext != "" || r.ServingStatus == "ready") {
		fields["external_ip"] = ext
	}
	domain := FunctionDomain(r, base)
	switch {
	case r.ServingStatus != "ready":
		h.External = store.HealthLayer{State: "unknown", Reason: "Knative Serving is not installed: no external path yet", CheckedAt: now}
	case ext == "":
		h.External = store.HealthLayer{State: "down", Reason: "Traefik's Service " + r.ServingNamespace + "/" + TraefikRelease + " has no external address: does the cluster have a load-balancer implementation?", CheckedAt: now}
	case domain == "":
		h.External = store.HealthLayer{State: "unknown", Reason: "external address " + ext + "; no function domain yet: set the platform's base domain", CheckedAt: now}
	default:
		ok, reason, err := (&Resolver{Server: s.Cfg.DNSResolver}).DNSCheck(ctx, domain, ext)
		switch {
		case err != nil:
			// The resolver's address and the library's message go to the log only.
			s.Log.Warn("status: DNS check", "region", r.Name, "domain", domain, "err", err)
			h.External = store.HealthLayer{State: "unknown", Reason: "external address " + ext + "; the DNS check failed (" + dnsCause(err) + "); the console's log has the details", CheckedAt: now}
		case ok:
			h.External = store.HealthLayer{State: "ok", Reason: reason, CheckedAt: now}
		default:
			h.External = store.HealthLayer{State: "degraded", Reason: reason, CheckedAt: now}
		}
		fields["dns_resolved"] = ok
	}
	return h, fields
}

// Sweep checks every active region once: bounded concurrency, a deadline per region,
// one look per cluster, and a circuit breaker that backs off from clusters that do not
// answer so that they never delay the others.
func (s *Service) Sweep(ctx context.Context) error {
	regions, err := s.Store.ListRegions(ctx, store.RegionFilter{ActiveOnly: true}, true)
	if err != nil {
		return err
	}
	base, err := s.Store.BaseDomain(ctx)
	if err != nil {
		return err
	}
	byCluster := map[string][]*store.Region{}
	for i := range regions {
		k := regions[i].ClusterKey + "|" + hashOf(regions[i].Kubeconfig)
		byCluster[k] = append(byCluster[k], &regions[i])
	}
	sem := make(chan struct{}, max(1, s.Cfg.StatusConcurrency))
	var wg sync.WaitGroup
	for k, rs := range byCluster {
		wg.Add(1)
		sem <- struct{}{}
		go func(k string, rs []*store.Region) {
			defer wg.Done()
			defer func() { <-sem }()
			s.checkCluster(ctx, k, rs, base)
		}(k, rs)
	}
	wg.Wait()
	return ctx.Err()
}

// checkCluster checks the regions of one cluster with one look at it.
func (s *Service) checkCluster(ctx context.Context, k string, rs []*store.Region, base string) {
	if !s.breaker.allow(k) {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, s.Cfg.StatusTimeout)
	st := s.observe(cctx, rs[0])
	if st.err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		st.err = fmt.Errorf("no answer within %s", s.Cfg.StatusTimeout)
	}
	cancel()
	var failures int
	var next time.Time
	if st.err != nil {
		failures, next = s.breaker.fail(k)
	} else {
		s.breaker.ok(k)
	}
	for _, r := range rs {
		dctx, cancel := context.WithTimeout(ctx, s.Cfg.StatusTimeout)
		h, fields := s.checkRegion(dctx, r, st, base)
		cancel()
		if st.err != nil {
			h.Failures, h.NextCheck = failures, next
			h.API.Reason += fmt.Sprintf(" (%d failed check(s) in a row; next check at %s)", failures, next.Format("15:04:05"))
		}
		fields["health"] = store.JSON[store.Health]{V: h}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if err := s.Store.SetRegion(wctx, r.ID, fields); err != nil {
			s.Log.Warn("status: save", "region", r.Name, "err", err)
		}
		cancel()
		if st.err == nil {
			s.followBaseDomain(ctx, r, base)
		}
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
	k := r.ClusterKey + "|" + hashOf(r.Kubeconfig)
	s.breaker.ok(k)
	s.checkCluster(ctx, k, []*store.Region{r}, base)
	return nil
}

// followBaseDomain gives a region with Serving and no function domain the base domain's,
// once a base domain is set.
func (s *Service) followBaseDomain(ctx context.Context, r *store.Region, base string) {
	if base == "" || r.ServingStatus != "ready" || r.Settings.V.KnativeDomain != "" {
		return
	}
	if _, err := s.Store.ActiveJob(ctx, r.ID, KindSetDomain); err == nil {
		return
	}
	if _, err := s.Enqueue(ctx, JobRequest{Kind: KindSetDomain, Title: "Function domain of " + r.Name, RegionID: r.ID,
		Params: DomainParams{Domain: r.Name + "." + base}, CreatedBy: "status check"}); err != nil {
		s.Log.Warn("status: queue the function domain", "region", r.Name, "err", err)
	}
}

// RunBackground runs the status sweep every interval until ctx ends.
func (s *Service) RunBackground(ctx context.Context) {
	t := time.NewTicker(s.Cfg.StatusInterval)
	defer t.Stop()
	for {
		start := time.Now()
		if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.Log.Warn("status sweep", "err", err)
		} else if ctx.Err() == nil {
			s.Log.Debug("status sweep done", "took", time.Since(start))
		}
		s.Periodic(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
