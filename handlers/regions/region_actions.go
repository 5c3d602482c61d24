package regions

import (
	"encoding/json"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"runr.dev/console/handlers"
	"runr.dev/console/ops"
)

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

// APISetFunctionTLS is PUT /api/knative-regions/{id}/function-tls.
func (h *Handlers) APISetFunctionTLS(c *fiber.Ctx) error {
	return handlers.RegionJobAPI(h.Handlers, c, h.Ops.SetFunctionTLS)
}

// APIDeleteFunctionTLS is DELETE /api/knative-regions/{id}/function-tls.
func (h *Handlers) APIDeleteFunctionTLS(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.RemoveFunctionTLS)
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

// APIDeleteRegion is DELETE /api/knative-regions/{id}: RunR's record only, nothing is
// removed from the cluster (204); with ?teardown=true what RunR installed is removed
// first, by a job (202 with its id; refused while projects remain). Without teardown the
// region's projects stay, without a region.
func (h *Handlers) APIDeleteRegion(c *fiber.Ctx) error {
	teardown := false
	if v := c.Query("teardown"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return handlers.Invalid(c, handlers.FieldErrors{"teardown": "Use true (remove what RunR installed first) or false (the record only)."})
		}
		teardown = b
	}
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	if teardown {
		j, err := h.Ops.Teardown(c.UserContext(), h.Actor(c), r)
		return h.Accepted(c, j, err)
	}
	if err := h.Ops.DeleteRegion(c.UserContext(), h.Actor(c), r); err != nil {
		return h.Fail(c, err)
	}
	return c.SendStatus(fiber.StatusNoContent)
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
