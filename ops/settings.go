package ops

import (
	"context"
	"fmt"
	"runr.dev/console/kube"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"runr.dev/console/engine"
	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/statusblock"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// Job kinds of region settings.
const (
	KindApplySettings     = "apply-settings"
	KindFunctionTLS       = "function-tls"
	KindRemoveFunctionTLS = "remove-function-tls"
	KindInstallMonitoring = "install-monitoring"
)

// SettingsParams say which changes to bring to the cluster.
type SettingsParams struct {
	Traefik bool `json:"traefik"`
	Knative bool `json:"knative"`
	Agent   bool `json:"agent"`
}

// TLSParams is a function TLS upload (the key goes in the job's secret).
type TLSParams struct {
	Certificate     string `json:"certificate"`
	ReplaceExisting bool   `json:"replace_existing"`
}

func (s *Service) registerSettingsKinds() {
	s.Engine.Register(&engine.Kind{Name: KindApplySettings, Plan: engine.PlanWith(func(p SettingsParams) []engine.Step {
		return []engine.Step{
			s.RegionStep("traefik", "Traefik's entry point timeouts", kit.SkipUnless(p.Traefik, func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
				return s.Knative.UpdateTraefikTimeouts(ctx, jc, c, r)
			})),
			s.RegionStep("knative", "Knative's max-revision-timeout-seconds", kit.SkipUnless(p.Knative, s.settingsKnative)),
			s.RegionStep("agent", "The agent's address", kit.SkipUnless(p.Agent, s.settingsAgent)),
		}
	})})
	s.Engine.Register(&engine.Kind{Name: KindFunctionTLS, Plan: engine.PlanWith(func(p TLSParams) []engine.Step {
		return []engine.Step{s.RegionStep("tls", "Function-domain certificate", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			return s.Domains.ApplyFunctionTLS(ctx, jc, c, r, p.Certificate, jc.Secret, p.ReplaceExisting)
		})}
	})})
	s.Engine.Register(&engine.Kind{Name: KindRemoveFunctionTLS, Plan: engine.Fixed(
		s.RegionStep("tls", "Remove the function-domain certificate", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			return s.Domains.RemoveFunctionTLS(ctx, jc, c, r)
		}),
	)})
	s.Engine.Register(&engine.Kind{Name: KindInstallMonitoring, Plan: engine.Fixed(
		s.RegionStep("prometheus", "Prometheus", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			return s.Knative.Component(ctx, jc, r, "prometheus", func() error { return s.Observability.InstallPrometheus(ctx, jc, c, r) })
		}),
		s.RegionStep("loki", "Loki", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			return s.Knative.Component(ctx, jc, r, "loki", func() error { return s.Observability.InstallLoki(ctx, jc, c, r) })
		}),
		s.RegionStep("tempo", "Tempo (tracing)", s.Observability.RefreshTracing),
	)})
}

// settingsKnative raises Knative's max-revision-timeout-seconds to the longest request
// timeout of the cluster's regions (step "knative" of an apply-settings job).
func (s *Service) settingsKnative(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	if r.ServingStatus != store.ComponentReady {
		jc.Note("Knative Serving is not ready: the value applies with its install")
		return engine.ErrSkip
	}
	regions, err := s.Store.RegionsOnCluster(ctx, r.ClusterKey)
	if err != nil {
		return err
	}
	want := knative.LongestTimeout(regions)
	raised, err := knative.RaiseMaxRevisionTimeout(ctx, c, r.ServingNamespace, want)
	if err != nil {
		return err
	}
	if !raised {
		jc.Note("max-revision-timeout-seconds is high enough already (it is never lowered)")
		return engine.ErrSkip
	}
	if err := knative.WaitServingApplied(ctx, jc, c, r.ServingNamespace, fmt.Sprintf("max-revision-timeout-seconds %d", want)); err != nil {
		return err
	}
	jc.Note("Raised Knative's max-revision-timeout-seconds to %d", want)
	return nil
}

// settingsAgent gives the runr-agent the region's agent address (step "agent" of an
// apply-settings job); before Serving's install there is no agent yet.
func (s *Service) settingsAgent(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	if _, err := c.Clientset.AppsV1().Deployments(observability.ObservabilityNamespace).Get(ctx, observability.AgentName, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		jc.Note("No runr-agent yet: it gets the address when Serving is installed")
		return engine.ErrSkip
	}
	return s.Observability.InstallAgent(ctx, jc, c, r)
}

// SettingsInput is the body of PUT /api/knative-regions/{id}/settings: the General
// settings; only the keys sent change.
type SettingsInput struct {
	RequestTimeout    *int      `json:"request_timeout"`
	AgentWSURL        *string   `json:"agent_ws_url"`
	IngressTrustedIPs *[]string `json:"ingress_trusted_ips"`
	// ImageMirror is the region's own image mirror ("" takes the console's); what runs
	// moves with `runr reconcile --step image-mirror`, new installs take it at once.
	ImageMirror *string `json:"image_mirror"`
}

// any reports whether the input changes a setting.
func (in SettingsInput) any() bool {
	return in.RequestTimeout != nil || in.AgentWSURL != nil || in.IngressTrustedIPs != nil || in.ImageMirror != nil
}

// UpdateSettings saves the region's General settings and queues the job that brings the
// changes to the cluster (Traefik's timeouts and trusted addresses, Knative's maximum,
// the agent's address); the job is nil when nothing on the cluster changes.
func (s *Service) UpdateSettings(ctx context.Context, actor kit.Actor, r *store.Region, in SettingsInput) (*store.Job, error) {
	if err := problem.FromFields(validateSettings(&in)); err != nil {
		return nil, err
	}
	set := r.Settings.V
	var p SettingsParams
	// Only the settings sent are written: an edit of another setting made meanwhile stays.
	u := store.RegionSettingsUpdate{ImageMirror: in.ImageMirror}
	if in.RequestTimeout != nil && *in.RequestTimeout != set.RequestTimeout {
		u.RequestTimeout = in.RequestTimeout
		p.Traefik = true
		p.Knative = *in.RequestTimeout > knative.MaxRevisionTimeoutDefault
	}
	if in.AgentWSURL != nil && *in.AgentWSURL != set.AgentWSURL {
		u.AgentWSURL = in.AgentWSURL
		p.Agent = true
	}
	if in.IngressTrustedIPs != nil && strings.Join(*in.IngressTrustedIPs, ",") != strings.Join(set.IngressTrustedIPs, ",") {
		u.IngressTrustedIPs = in.IngressTrustedIPs
		p.Traefik = true
	}
	if err := s.Store.UpdateRegionSettings(ctx, r.ID, u); err != nil {
		return nil, fmt.Errorf("settings of %s: %w", r.Name, err)
	}
	if !p.Traefik && !p.Knative && !p.Agent {
		return nil, nil
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindApplySettings, Title: "Apply the settings of " + r.Name,
		Subject: r.ID, Params: p, CreatedBy: actor.Email})
}

// validStatus refuses a region status other than active, inactive and maintenance.
func validStatus(status store.RegionStatus) error {
	switch status {
	case store.RegionActive, store.RegionInactive, store.RegionMaintenance:
		return nil
	}
	return &problem.Invalid{Fields: map[string]string{"region_status": "Choose active, inactive or maintenance."}}
}

// SetRegionStatus changes the region's status and queues the change of its block on the
// cluster (nil when the status stays).
func (s *Service) SetRegionStatus(ctx context.Context, actor kit.Actor, r *store.Region, status store.RegionStatus) (*store.Job, error) {
	if err := validStatus(status); err != nil {
		return nil, err
	}
	if status == r.Status {
		return nil, nil
	}
	if err := s.Store.SetRegionStatus(ctx, r.ID, status); err != nil {
		return nil, fmt.Errorf("status of %s: %w", r.Name, err)
	}
	s.Log.Info("region status changed", "region", r.Name, "from", r.Status, "to", status, "user", actor.Email)
	return s.Enqueue(ctx, engine.Request{Kind: statusblock.KindRegionStatus, Title: "Set the status of region " + r.Name + " to " + string(status),
		Subject: r.ID, CreatedBy: actor.Email})
}

// RegionUpdate is the body of PUT /api/knative-regions/{id}: the region's status and its
// General settings; only the keys sent change.
type RegionUpdate struct {
	RegionStatus *store.RegionStatus `json:"region_status"`
	// RegionMode is set by platform administrators only (Tenancy module); ignored from others.
	RegionMode *store.RegionMode `json:"region_mode"`
	SettingsInput
}

// UpdateRegion changes the status and the General settings sent, once both are valid; the
// job is the one that brings the last change to the cluster (nil when none needs one).
func (s *Service) UpdateRegion(ctx context.Context, actor kit.Actor, r *store.Region, in RegionUpdate) (*store.Job, error) {
	if in.RegionStatus != nil {
		if err := validStatus(*in.RegionStatus); err != nil {
			return nil, err
		}
	}
	errs := validateSettings(&in.SettingsInput)
	mode := s.Tenancy.RegionModeOf(actor, in.RegionMode, errs)
	if err := problem.FromFields(errs); err != nil {
		return nil, err
	}
	if mode != nil && *mode != r.Mode {
		if err := s.Store.SetRegionMode(ctx, r.ID, *mode); err != nil {
			return nil, fmt.Errorf("update region: %w", err)
		}
		s.Log.Info("region mode set", "region", r.Name, "mode", *mode, "by", actor.Email)
	}
	var job *store.Job
	if in.RegionStatus != nil {
		j, err := s.SetRegionStatus(ctx, actor, r, *in.RegionStatus)
		if err != nil {
			return nil, err
		}
		job = j
		if r, err = s.Store.RegionByID(ctx, r.ID); err != nil {
			return nil, fmt.Errorf("update region: %w", err)
		}
	}
	if in.any() {
		j, err := s.UpdateSettings(ctx, actor, r, in.SettingsInput)
		if err != nil {
			return nil, err
		}
		if j != nil {
			job = j
		}
	}
	return job, nil
}

// TLSInput is the body of PUT /api/knative-regions/{id}/function-tls.
type TLSInput struct {
	Certificate     string `json:"certificate"`
	PrivateKey      string `json:"private_key"`
	ReplaceExisting bool   `json:"replace_existing"`
	// UseConsoleCertificate takes the console's own certificate (RUNR_TLS_SECRET) instead of
	// an upload: only for a region on the cluster the console runs in.
	UseConsoleCertificate bool `json:"use_console_certificate"`
}

// consoleCertificate reads the console's own certificate and key for a region on the
// cluster the console runs in, through the region's kubeconfig (the console's service
// account reads only kube-system); a certificate that does not cover domain is a field
// error of use_console_certificate.
func (s *Service) consoleCertificate(ctx context.Context, r *store.Region, domain string) (cert, key string, err error) {
	ns, name, ok := strings.Cut(s.Cfg.ConsoleTLSSecret, "/")
	if !ok || ns == "" || name == "" {
		return "", "", &problem.Refused{Field: "use_console_certificate", Reason: "The console has no certificate of its own to hand out (RUNR_TLS_SECRET, namespace/name of a TLS Secret; the chart sets it from ingress.tls): upload one for the region instead."}
	}
	c, err := s.RegionCluster(r)
	if err != nil {
		return "", "", err
	}
	if !s.Observability.OwnCluster(ctx, c) {
		return "", "", &problem.Refused{Field: "use_console_certificate", Reason: "Region " + r.Name + " is not on the cluster the console runs in: the console's certificate stays on its own cluster; upload one for the region instead."}
	}
	sec, err := c.Clientset.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", "", &problem.Refused{Field: "use_console_certificate", Reason: "The console's certificate (Secret " + s.Cfg.ConsoleTLSSecret + ") is not on the cluster: check RUNR_TLS_SECRET, or upload one for the region."}
	}
	if err != nil {
		return "", "", fmt.Errorf("read the console's certificate %s: %w", s.Cfg.ConsoleTLSSecret, err)
	}
	cert, key = string(sec.Data["tls.crt"]), string(sec.Data["tls.key"])
	if _, errs := kit.CheckCertificate(cert, key, domain, time.Now()); errs != nil {
		msgs := make([]string, 0, len(errs))
		for _, m := range errs {
			msgs = append(msgs, m)
		}
		sort.Strings(msgs)
		return "", "", &problem.Invalid{Fields: map[string]string{"use_console_certificate": "The console's certificate cannot serve this region: " + strings.Join(msgs, " ")}}
	}
	return cert, key, nil
}

// SetFunctionTLS checks a certificate for the region's function domain and queues its
// installation (Serving must be ready).
func (s *Service) SetFunctionTLS(ctx context.Context, actor kit.Actor, r *store.Region, in TLSInput) (*store.Job, error) {
	if r.ServingStatus != store.ComponentReady {
		return nil, &problem.Refused{Reason: "Function-domain TLS needs Knative Serving ready on the region."}
	}
	base, err := s.Store.BaseDomain(ctx)
	if err != nil {
		return nil, fmt.Errorf("function TLS of %s: %w", r.Name, err)
	}
	domain := domains.FunctionDomain(r, base)
	if in.UseConsoleCertificate {
		if in.Certificate, in.PrivateKey, err = s.consoleCertificate(ctx, r, domain); err != nil {
			return nil, err
		}
	}
	errs := map[string]string{}
	if strings.TrimSpace(in.Certificate) == "" {
		errs["certificate"] = "Paste the certificate (PEM)."
	}
	if strings.TrimSpace(in.PrivateKey) == "" {
		errs["private_key"] = "Paste the private key (PEM)."
	}
	if err := problem.FromFields(errs); err != nil {
		return nil, err
	}
	if _, errs := kit.CheckCertificate(in.Certificate, in.PrivateKey, domain, time.Now()); errs != nil {
		return nil, &problem.Invalid{Fields: errs}
	}
	title := "Function-domain certificate of " + r.Name
	if in.UseConsoleCertificate {
		title += " (the console's, " + s.Cfg.ConsoleTLSSecret + ")"
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindFunctionTLS, Title: title,
		Subject: r.ID, Params: TLSParams{Certificate: in.Certificate, ReplaceExisting: in.ReplaceExisting},
		Secret: in.PrivateKey, CreatedBy: actor.Email})
}

// RemoveFunctionTLS queues the removal of the function-domain certificate.
func (s *Service) RemoveFunctionTLS(ctx context.Context, actor kit.Actor, r *store.Region) (*store.Job, error) {
	return s.Enqueue(ctx, engine.Request{Kind: KindRemoveFunctionTLS, Title: "Remove the function-domain certificate of " + r.Name,
		Subject: r.ID, CreatedBy: actor.Email})
}

// MonitoringInput is the change of a region's monitoring: only the fields set change,
// and "" is RunR's own Prometheus or Loki.
type MonitoringInput struct {
	PrometheusURL *string
	LokiURL       *string
	LokiOrgID     *string
	// StorageClass ("" the cluster's default), the sizes in GiB and the retentions in
	// days (0 RunR's defaults) of RunR's own Prometheus, Loki and Tempo.
	StorageClass            *string
	PrometheusSizeGi        *int
	LokiSizeGi              *int
	TempoSizeGi             *int
	PrometheusRetentionDays *int
	LokiRetentionDays       *int
}

// UpdateMonitoring saves the addresses of the region's Prometheus and Loki; going back
// to RunR's own queues its install at once when Serving is ready.
func (s *Service) UpdateMonitoring(ctx context.Context, actor kit.Actor, r *store.Region, in MonitoringInput) (*store.Job, error) {
	m := r.Monitoring.V
	errs := map[string]string{}
	backToOwn := false
	for key, f := range map[string]struct{ in, dst *string }{"prometheus_url": {in.PrometheusURL, &m.PrometheusURL},
		"loki_url": {in.LokiURL, &m.LokiURL}, "loki_org_id": {in.LokiOrgID, &m.LokiOrgID}} {
		if f.in == nil {
			continue
		}
		val := strings.TrimSpace(*f.in)
		if key != "loki_org_id" {
			if msg := ValidateMonitoringURL(val); msg != "" {
				errs[key] = msg
				continue
			}
			backToOwn = backToOwn || val == "" && *f.dst != ""
		}
		*f.dst = val
	}
	if why := s.Tenancy.SetsExistingMonitoring(actor); why != "" && (m.PrometheusURL != "" || m.LokiURL != "") {
		return nil, &problem.Forbidden{Reason: why}
	}
	storageChanged, err := s.monitoringStorage(ctx, r, in, &m, errs)
	if err != nil {
		return nil, err
	}
	if err := problem.FromFields(errs); err != nil {
		return nil, err
	}
	if err := s.Store.UpdateMonitoring(ctx, r.ID, monitoringUpdate(in, m)); err != nil {
		return nil, fmt.Errorf("monitoring of %s: %w", r.Name, err)
	}
	if !backToOwn && !storageChanged || r.ServingStatus != store.ComponentReady {
		return nil, nil
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindInstallMonitoring, Title: "Apply RunR's Prometheus, Loki and Tempo on " + r.Name,
		Subject: r.ID, CreatedBy: actor.Email})
}

// monitoringUpdate is the part of m that in changed (what UpdateMonitoring writes).
func monitoringUpdate(in MonitoringInput, m store.Monitoring) store.MonitoringUpdate {
	var u store.MonitoringUpdate
	pick := func(sent bool, v *string) *string {
		if sent {
			return v
		}
		return nil
	}
	pickN := func(sent bool, v *int) *int {
		if sent {
			return v
		}
		return nil
	}
	u.PrometheusURL, u.LokiURL, u.LokiOrgID = pick(in.PrometheusURL != nil, &m.PrometheusURL), pick(in.LokiURL != nil, &m.LokiURL), pick(in.LokiOrgID != nil, &m.LokiOrgID)
	u.StorageClass = pick(in.StorageClass != nil, &m.StorageClass)
	u.PrometheusSizeGi, u.LokiSizeGi, u.TempoSizeGi = pickN(in.PrometheusSizeGi != nil, &m.PrometheusSizeGi), pickN(in.LokiSizeGi != nil, &m.LokiSizeGi), pickN(in.TempoSizeGi != nil, &m.TempoSizeGi)
	u.PrometheusRetentionDays = pickN(in.PrometheusRetentionDays != nil, &m.PrometheusRetentionDays)
	u.LokiRetentionDays = pickN(in.LokiRetentionDays != nil, &m.LokiRetentionDays)
	return u
}

// monitoringStorage applies the storage fields of in to m, with their field errors in
// errs; changed says whether RunR's Prometheus, Loki or Tempo must be applied again. A
// class must be one the cluster has.
func (s *Service) monitoringStorage(ctx context.Context, r *store.Region, in MonitoringInput, m *store.Monitoring, errs map[string]string) (changed bool, err error) {
	before := *m
	for key, f := range map[string]struct {
		in   *int
		dst  *int
		max  int
		unit string
	}{
		"prometheus_size_gi":        {in.PrometheusSizeGi, &m.PrometheusSizeGi, observability.MaxSizeGi, "GiB"},
		"loki_size_gi":              {in.LokiSizeGi, &m.LokiSizeGi, observability.MaxSizeGi, "GiB"},
		"tempo_size_gi":             {in.TempoSizeGi, &m.TempoSizeGi, observability.MaxSizeGi, "GiB"},
		"prometheus_retention_days": {in.PrometheusRetentionDays, &m.PrometheusRetentionDays, observability.MaxRetentionDays, "days"},
		"loki_retention_days":       {in.LokiRetentionDays, &m.LokiRetentionDays, observability.MaxRetentionDays, "days"},
	} {
		if f.in == nil {
			continue
		}
		if *f.in < 0 || *f.in > f.max {
			errs[key] = fmt.Sprintf("Use 1 to %d %s, or 0 for RunR's default.", f.max, f.unit)
			continue
		}
		*f.dst = *f.in
	}
	if in.StorageClass != nil {
		class := strings.TrimSpace(*in.StorageClass)
		switch {
		case class == "":
		case len(validation.IsDNS1123Subdomain(class)) > 0:
			errs["storage_class"] = "Use a StorageClass name (lower-case letters, digits, '-' and '.'), or empty for the cluster's default."
		default:
			c, err := s.RegionCluster(r)
			if err != nil {
				return false, err
			}
			if _, err := c.Clientset.StorageV1().StorageClasses().Get(ctx, class, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				errs["storage_class"] = "The cluster has no StorageClass " + class + "."
			} else if err != nil {
				return false, fmt.Errorf("read StorageClass %s: %w", class, err)
			}
		}
		m.StorageClass = class
	}
	return *m != before, nil
}
