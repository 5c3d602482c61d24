package handlers

import (
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/engine"
	"runr.dev/console/ops"
	"runr.dev/console/store"
)

// SettingsInput is the body of PUT /api/knative-regions/{id}/settings: only the keys sent change.
type SettingsInput struct {
	RequestTimeout    *int      `json:"request_timeout"`
	AgentWSURL        *string   `json:"agent_ws_url"`
	IngressTrustedIPs *[]string `json:"ingress_trusted_ips"`
}

// validateSettings checks the keys that are set and normalises the trusted addresses.
func validateSettings(in *SettingsInput) FieldErrors {
	errs := FieldErrors{}
	if in.RequestTimeout != nil && (*in.RequestTimeout < 1 || *in.RequestTimeout > 3600) {
		errs["request_timeout"] = "Use 1 to 3600 seconds."
	}
	if in.AgentWSURL != nil && *in.AgentWSURL != "" {
		u, err := url.Parse(*in.AgentWSURL)
		if err != nil || u.Host == "" || (u.Scheme != "wss" && u.Scheme != "ws" && u.Scheme != "https" && u.Scheme != "http") {
			errs["agent_ws_url"] = "Use a wss:// (or https://) address the region's agent can reach, e.g. wss://runr.internal.example.com."
		}
	}
	if in.IngressTrustedIPs != nil {
		var out []string
		for _, v := range *in.IngressTrustedIPs {
			v = strings.TrimSpace(v)
			if v == "" {
				continue
			}
			if ip := net.ParseIP(v); ip != nil {
				if ip.To4() != nil {
					v += "/32"
				} else {
					v += "/128"
				}
			}
			_, n, err := net.ParseCIDR(v)
			if err != nil {
				errs["ingress_trusted_ips"] = "Not a CIDR: " + v + " (use e.g. 10.0.0.0/24)."
				break
			}
			out = append(out, n.String())
		}
		if out == nil {
			out = []string{}
		}
		*in.IngressTrustedIPs = out
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// updateSettings saves the region's General settings and brings the changes to the
// cluster in the background: Traefik's timeouts, Knative's maximum, the agent's address.
func (h *Handlers) updateSettings(c *fiber.Ctx, r *store.Region, in SettingsInput) (*store.Job, FieldErrors, error) {
	if errs := validateSettings(&in); errs != nil {
		return nil, errs, nil
	}
	s := r.Settings.V
	var p ops.SettingsParams
	if in.RequestTimeout != nil && *in.RequestTimeout != s.RequestTimeout {
		s.RequestTimeout = *in.RequestTimeout
		p.Traefik = true
		p.Knative = s.RequestTimeout > ops.MaxRevisionTimeoutDefault
	}
	if in.AgentWSURL != nil && *in.AgentWSURL != s.AgentWSURL {
		s.AgentWSURL = *in.AgentWSURL
		p.Agent = true
	}
	if in.IngressTrustedIPs != nil && strings.Join(*in.IngressTrustedIPs, ",") != strings.Join(s.IngressTrustedIPs, ",") {
		s.IngressTrustedIPs = *in.IngressTrustedIPs
		p.Traefik = true
	}
	if err := h.Store.SetRegionSettings(ctx(c), r.ID, s); err != nil {
		return nil, nil, err
	}
	if !p.Traefik && !p.Knative && !p.Agent {
		return nil, nil, nil
	}
	j, err := h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindApplySettings, Title: "Apply the settings of " + r.Name,
		Subject: r.ID, Params: p, CreatedBy: Who(c).User.Email})
	return j, nil, err
}

// APIUpdateSettings is PUT /api/knative-regions/{id}/settings.
func (h *Handlers) APIUpdateSettings(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	var in SettingsInput
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	j, fe, err := h.updateSettings(c, r, in)
	if err != nil {
		return h.Fail(c, err)
	}
	if fe != nil {
		return Invalid(c, fe)
	}
	return h.regionAnswer(c, r.ID, j)
}

// regionAnswer answers with the region, and the job that applies a change (if any).
func (h *Handlers) regionAnswer(c *fiber.Ctx, id string, j *store.Job) error {
	r, err := h.Store.RegionByID(ctx(c), id)
	if err != nil {
		return h.Fail(c, err)
	}
	base, err := h.Store.BaseDomain(ctx(c))
	if err != nil {
		return h.Fail(c, err)
	}
	out := fiber.Map{"data": ToRegionJSON(r, base)}
	if j != nil {
		out["job_id"] = j.ID
	}
	return c.JSON(out)
}

// setStatus changes region_status and queues the block's change on the cluster.
func (h *Handlers) setStatus(c *fiber.Ctx, r *store.Region, status store.RegionStatus) (*store.Job, FieldErrors, error) {
	switch status {
	case store.RegionActive, store.RegionInactive, store.RegionMaintenance:
	default:
		return nil, FieldErrors{"region_status": "Choose active, inactive or maintenance."}, nil
	}
	if status == r.Status {
		return nil, nil, nil
	}
	if err := h.Store.SetRegionStatus(ctx(c), r.ID, status); err != nil {
		return nil, nil, err
	}
	h.Log.Info("region status changed", "region", r.Name, "from", r.Status, "to", status, "user", Who(c).User.Email)
	j, err := h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindRegionStatus, Title: "Region " + r.Name + " is " + string(status),
		Subject: r.ID, CreatedBy: Who(c).User.Email})
	return j, nil, err
}

// APIUpdateRegion is PUT /api/knative-regions/{id}: region_status, and the General settings.
func (h *Handlers) APIUpdateRegion(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	var in struct {
		RegionStatus *store.RegionStatus `json:"region_status"`
		SettingsInput
	}
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	var job *store.Job
	if in.RegionStatus != nil {
		j, fe, err := h.setStatus(c, r, *in.RegionStatus)
		if err != nil {
			return h.Fail(c, err)
		}
		if fe != nil {
			return Invalid(c, fe)
		}
		job = j
		if r, err = h.Store.RegionByID(ctx(c), r.ID); err != nil {
			return h.Fail(c, err)
		}
	}
	if in.RequestTimeout != nil || in.AgentWSURL != nil || in.IngressTrustedIPs != nil {
		j, fe, err := h.updateSettings(c, r, in.SettingsInput)
		if err != nil {
			return h.Fail(c, err)
		}
		if fe != nil {
			return Invalid(c, fe)
		}
		if j != nil {
			job = j
		}
	}
	return h.regionAnswer(c, r.ID, job)
}

// TLSInput is the body of PUT /api/knative-regions/{id}/function-tls.
type TLSInput struct {
	Certificate     string `json:"certificate"`
	PrivateKey      string `json:"private_key"`
	ReplaceExisting bool   `json:"replace_existing"`
}

func (h *Handlers) setFunctionTLS(c *fiber.Ctx, r *store.Region, in TLSInput) (*store.Job, FieldErrors, string, error) {
	if r.ServingStatus != store.ComponentReady {
		return nil, nil, "Function-domain TLS needs Knative Serving ready on the region.", nil
	}
	base, err := h.Store.BaseDomain(ctx(c))
	if err != nil {
		return nil, nil, "", err
	}
	errs := FieldErrors{}
	if strings.TrimSpace(in.Certificate) == "" {
		errs["certificate"] = "Paste the certificate (PEM)."
	}
	if strings.TrimSpace(in.PrivateKey) == "" {
		errs["private_key"] = "Paste the private key (PEM)."
	}
	if len(errs) > 0 {
		return nil, errs, "", nil
	}
	if _, fe := ops.CheckCertificate(in.Certificate, in.PrivateKey, KnativeDomain(r, base), time.Now()); fe != nil {
		return nil, fe, "", nil
	}
	j, err := h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindFunctionTLS, Title: "Function-domain certificate of " + r.Name,
		Subject: r.ID, Params: ops.TLSParams{Certificate: in.Certificate, ReplaceExisting: in.ReplaceExisting},
		Secret: in.PrivateKey, CreatedBy: Who(c).User.Email})
	return j, nil, "", err
}

// APISetFunctionTLS is PUT /api/knative-regions/{id}/function-tls.
func (h *Handlers) APISetFunctionTLS(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	var in TLSInput
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	j, fe, msg, err := h.setFunctionTLS(c, r, in)
	return h.Accepted(c, j, fe, msg, err)
}

// APIDeleteFunctionTLS is DELETE /api/knative-regions/{id}/function-tls.
func (h *Handlers) APIDeleteFunctionTLS(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindRemoveFunctionTLS, Title: "Remove the function-domain certificate of " + r.Name,
		Subject: r.ID, CreatedBy: Who(c).User.Email})
	if err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": j.ID})
}

// updateMonitoring changes the keys sent (null: RunR's own) and installs RunR's own at
// once when Serving is ready.
func (h *Handlers) updateMonitoring(c *fiber.Ctx, r *store.Region, raw map[string]json.RawMessage) (*store.Job, FieldErrors, error) {
	m := r.Monitoring.V
	errs := FieldErrors{}
	backToOwn := false
	for key, dst := range map[string]*string{"prometheus_url": &m.PrometheusURL, "loki_url": &m.LokiURL, "loki_org_id": &m.LokiOrgID} {
		v, ok := raw[key]
		if !ok {
			continue
		}
		var s *string
		if err := json.Unmarshal(v, &s); err != nil {
			errs[key] = "Use a string, or null."
			continue
		}
		val := ""
		if s != nil {
			val = strings.TrimSpace(*s)
		}
		if key != "loki_org_id" {
			if msg := ValidateMonitoringURL(val); msg != "" {
				errs[key] = msg
				continue
			}
			if val == "" && *dst != "" {
				backToOwn = true
			}
		}
		*dst = val
	}
	if len(errs) > 0 {
		return nil, errs, nil
	}
	if err := h.Store.SetMonitoring(ctx(c), r.ID, m); err != nil {
		return nil, nil, err
	}
	if !backToOwn || r.ServingStatus != store.ComponentReady {
		return nil, nil, nil
	}
	j, err := h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindInstallMonitoring, Title: "Install RunR's Prometheus and Loki on " + r.Name,
		Subject: r.ID, CreatedBy: Who(c).User.Email})
	return j, nil, err
}

// APIUpdateMonitoring is PUT /api/knative-regions/{id}/monitoring.
func (h *Handlers) APIUpdateMonitoring(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	raw := map[string]json.RawMessage{}
	if err := bodyMap(c, &raw); err != nil {
		return h.Fail(c, err)
	}
	j, fe, err := h.updateMonitoring(c, r, raw)
	if err != nil {
		return h.Fail(c, err)
	}
	if fe != nil {
		return Invalid(c, fe)
	}
	return h.regionAnswer(c, r.ID, j)
}

// APIDeleteRegion is DELETE /api/knative-regions/{id}: RunR's record only; nothing is
// removed from the cluster. Refused while projects remain.
func (h *Handlers) APIDeleteRegion(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	if err := h.Store.DeleteRegion(ctx(c), r.ID); err != nil {
		var hp *store.HasProjectsError
		if errors.As(err, &hp) {
			return Unprocessable(c, hp.Error())
		}
		return h.Fail(c, err)
	}
	h.Log.Info("region removed", "region", r.Name, "user", Who(c).User.Email)
	return c.SendStatus(fiber.StatusNoContent)
}
