package regions

// This file: a region's General tab, its settings, status, mode, function-domain
// certificate and monitoring (forms and API).

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// SettingsForm saves the General settings.
func (h *Handlers) SettingsForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	vals := map[string]string{"request_timeout": c.FormValue("request_timeout"), "agent_ws_url": c.FormValue("agent_ws_url"),
		"ingress_trusted_ips": c.FormValue("ingress_trusted_ips"), "image_mirror": c.FormValue("image_mirror")}
	n, err := strconv.Atoi(strings.TrimSpace(vals["request_timeout"]))
	if err != nil {
		return h.FormInvalid(c, r, "general", vals, handlers.FieldErrors{"request_timeout": "Use a whole number of seconds."}, "")
	}
	ws := strings.TrimSpace(vals["agent_ws_url"])
	ips := []string{}
	for _, p := range strings.Split(vals["ingress_trusted_ips"], ",") {
		if p = strings.TrimSpace(p); p != "" {
			ips = append(ips, p)
		}
	}
	mirror := vals["image_mirror"]
	j, err := h.Ops.UpdateSettings(c.UserContext(), h.Actor(c), r, ops.SettingsInput{RequestTimeout: &n, AgentWSURL: &ws, IngressTrustedIPs: &ips, ImageMirror: &mirror})
	msg := "Settings saved."
	if mirror != r.Settings.V.ImageMirror {
		msg = "Settings saved. The image mirror applies to the next installs; runr reconcile --step image-mirror moves what runs."
	}
	if j != nil {
		msg = "Settings saved; they are being applied to the cluster."
	}
	return h.FormOutcome(c, r, "general", vals, err, msg)
}

// APIUpdateSettings is PUT /api/knative-regions/{id}/settings.
func (h *Handlers) APIUpdateSettings(c *fiber.Ctx) error {
	r, in, err := handlers.RegionBody[ops.SettingsInput](h.Handlers, c)
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Ops.UpdateSettings(c.UserContext(), h.Actor(c), r, in)
	if err != nil {
		return h.Fail(c, err)
	}
	return h.RegionAnswer(c, r.ID, j)
}

// StatusForm sets the region status; a refusal is the form's message.
func (h *Handlers) StatusForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	status := c.FormValue("region_status")
	_, err = h.Ops.SetRegionStatus(c.UserContext(), h.Actor(c), r, store.RegionStatus(status))
	if fe, _, ok := h.Refusal(c, err); ok {
		return h.FormInvalid(c, r, "general", nil, fe, fe["region_status"])
	}
	return h.FormOutcome(c, r, "general", nil, err, "Region status set to "+status+".")
}

// APIUpdateRegion is PUT /api/knative-regions/{id}: region_status, and the General settings.
func (h *Handlers) APIUpdateRegion(c *fiber.Ctx) error {
	r, in, err := handlers.RegionBody[ops.RegionUpdate](h.Handlers, c)
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Ops.UpdateRegion(c.UserContext(), h.Actor(c), r, in)
	if err != nil {
		return h.Fail(c, err)
	}
	return h.RegionAnswer(c, r.ID, j)
}

// ModeForm sets the region mode from the General tab (platform administrators).
func (h *Handlers) ModeForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	mode := store.RegionMode(c.FormValue("region_mode"))
	_, err = h.Ops.UpdateRegion(c.UserContext(), h.Actor(c), r, ops.RegionUpdate{RegionMode: &mode})
	return h.FormOutcome(c, r, "general", map[string]string{"region_mode": string(mode)}, err, "Region mode saved.")
}

// FunctionTLSForm uploads a function-domain certificate.
func (h *Handlers) FunctionTLSForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	in := ops.TLSInput{Certificate: c.FormValue("certificate"), PrivateKey: c.FormValue("private_key"), ReplaceExisting: c.FormValue("replace_existing") == "1",
		UseConsoleCertificate: c.FormValue("use_console_certificate") == "1"}
	vals, flash := map[string]string{"certificate": in.Certificate}, "Certificate uploaded; it is being installed."
	if in.UseConsoleCertificate {
		vals, flash = nil, "The console's certificate is being installed."
	}
	_, err = h.Ops.SetFunctionTLS(c.UserContext(), h.Actor(c), r, in)
	return h.FormOutcome(c, r, "general", vals, err, flash)
}

// DeleteFunctionTLSForm removes the certificate.
func (h *Handlers) DeleteFunctionTLSForm(c *fiber.Ctx) error {
	return handlers.RegionFormAction(h.Handlers, c, "general", "The certificate is being removed.", h.Ops.RemoveFunctionTLS)
}

// APISetFunctionTLS is PUT /api/knative-regions/{id}/function-tls.
func (h *Handlers) APISetFunctionTLS(c *fiber.Ctx) error {
	return handlers.RegionJobAPI(h.Handlers, c, h.Ops.SetFunctionTLS)
}

// APIDeleteFunctionTLS is DELETE /api/knative-regions/{id}/function-tls.
func (h *Handlers) APIDeleteFunctionTLS(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.RemoveFunctionTLS)
}

// MonitoringForm saves the monitoring choice.
func (h *Handlers) MonitoringForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	vals := map[string]string{}
	for _, k := range []string{"prometheus_url", "loki_url", "loki_org_id", "storage_class"} {
		vals[k] = strings.TrimSpace(c.FormValue(k))
	}
	in := ops.MonitoringInput{PrometheusURL: store.Ptr(vals["prometheus_url"]), LokiURL: store.Ptr(vals["loki_url"]), LokiOrgID: store.Ptr(vals["loki_org_id"]),
		StorageClass: store.Ptr(vals["storage_class"])}
	// The sizes and retentions: empty is RunR's default (0).
	fe := map[string]string{}
	for key, dst := range map[string]**int{"prometheus_size_gi": &in.PrometheusSizeGi, "loki_size_gi": &in.LokiSizeGi, "tempo_size_gi": &in.TempoSizeGi,
		"prometheus_retention_days": &in.PrometheusRetentionDays, "loki_retention_days": &in.LokiRetentionDays} {
		vals[key] = strings.TrimSpace(c.FormValue(key))
		n, err := 0, error(nil)
		if vals[key] != "" {
			n, err = strconv.Atoi(vals[key])
		}
		if err != nil {
			fe[key] = "Use a whole number, or leave it empty for RunR's default."
			continue
		}
		*dst = &n
	}
	if err := problem.FromFields(fe); err != nil {
		return h.FormOutcome(c, r, "general", vals, err, "")
	}
	_, err = h.Ops.UpdateMonitoring(c.UserContext(), h.Actor(c), r, in)
	return h.FormOutcome(c, r, "general", vals, err, "Monitoring saved.")
}

// APIUpdateMonitoring is PUT /api/knative-regions/{id}/monitoring.
func (h *Handlers) APIUpdateMonitoring(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	raw := map[string]json.RawMessage{}
	if err := handlers.BodyMap(c, &raw); err != nil {
		return h.Fail(c, err)
	}
	in, fe := monitoringInput(raw)
	if fe != nil {
		return handlers.Invalid(c, fe)
	}
	j, err := h.Ops.UpdateMonitoring(c.UserContext(), h.Actor(c), r, in)
	if err != nil {
		return h.Fail(c, err)
	}
	return h.RegionAnswer(c, r.ID, j)
}

// monitoringInput reads the body of PUT /api/knative-regions/{id}/monitoring: the keys
// sent change, and null is RunR's own.
func monitoringInput(raw map[string]json.RawMessage) (ops.MonitoringInput, handlers.FieldErrors) {
	var in ops.MonitoringInput
	errs := handlers.FieldErrors{}
	for key, dst := range map[string]**string{"prometheus_url": &in.PrometheusURL, "loki_url": &in.LokiURL, "loki_org_id": &in.LokiOrgID,
		"storage_class": &in.StorageClass} {
		v, ok := raw[key]
		if !ok {
			continue
		}
		var s *string
		if err := json.Unmarshal(v, &s); err != nil {
			errs[key] = "Use a string, or null."
			continue
		}
		if s == nil {
			s = new(string)
		}
		*dst = s
	}
	for key, dst := range map[string]**int{"prometheus_size_gi": &in.PrometheusSizeGi, "loki_size_gi": &in.LokiSizeGi, "tempo_size_gi": &in.TempoSizeGi,
		"prometheus_retention_days": &in.PrometheusRetentionDays, "loki_retention_days": &in.LokiRetentionDays} {
		v, ok := raw[key]
		if !ok {
			continue
		}
		var n *int
		if err := json.Unmarshal(v, &n); err != nil {
			errs[key] = "Use a whole number, or null for RunR's default."
			continue
		}
		if n == nil {
			n = new(int)
		}
		*dst = n
	}
	if len(errs) > 0 {
		return in, errs
	}
	return in, nil
}
