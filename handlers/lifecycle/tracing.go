package lifecycle

import (
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/observability"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// tracingTab is the Tracing tab: the cluster's tracing backend, the region's mode, the
// retention and the regions sharing the backend.
func (h *Handlers) tracingTab(c *fiber.Ctx, r *store.Region) (templ.Component, error) {
	st, err := h.Ops.Observability.Tracing(c.UserContext(), r)
	if err != nil {
		return nil, err
	}
	comp := r.Components.V["tracing"]
	d := views.TracingData{RegionID: r.ID, Status: string(kit.OrDefault(comp.Status, store.ComponentNotInstalled)), Message: comp.Message, Version: comp.Version,
		InEffect: tracingInEffect(st), Kept: tracingKept(st), DefaultRetention: st.DefaultRetentionHours, Sharing: st.Sharing,
		WaitsForServing: st.Enabled && r.ServingStatus != store.ComponentReady, Removable: st.Enabled}
	mode := string(st.Mode)
	d.Form = views.Form{Values: map[string]string{"retention_hours": ""}}
	if st.RetentionHours > 0 {
		d.Form.Values["retention_hours"] = strconv.Itoa(st.RetentionHours)
	}
	if f, ok := c.Locals(handlers.TabFormKey).(views.Form); ok {
		d.Form, mode = f, f.V("mode")
	}
	d.Modes = []views.Option{
		{Value: "default", Label: "The console's default (" + onOff(st.DefaultOn) + ")", Selected: mode == "" || mode == "default"},
		{Value: string(store.TracingOn), Label: "On", Selected: mode == string(store.TracingOn)},
		{Value: string(store.TracingOff), Label: "Off", Selected: mode == string(store.TracingOff)},
	}
	if d.Busy, err = h.JobRunning(c, r.ID, []string{observability.KindTracing}); err != nil {
		return nil, err
	}
	return views.TracingTab(handlers.TabPage(c), d), nil
}

// tracingInEffect says whether tracing is on for the region and what decided it.
func tracingInEffect(st observability.TracingState) string {
	if st.Mode == store.TracingDefault {
		return onOff(st.Enabled) + ", the console's default"
	}
	return onOff(st.Enabled) + ", this region's own setting"
}

// tracingKept says how long the cluster's backend keeps traces and what decided it.
func tracingKept(st observability.TracingState) string {
	h := strconv.Itoa(st.Backend.RetentionHours) + " hours"
	if st.Backend.DecidedBy == "" {
		return h + " (the console's; no region of the cluster has tracing on)"
	}
	return h + ", decided by " + st.Backend.DecidedBy + " (the cluster's first region with tracing on)"
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// TracingForm saves the region's tracing mode from the Tracing tab.
func (h *Handlers) TracingForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	values := map[string]string{"mode": c.FormValue("mode"), "retention_hours": strings.TrimSpace(c.FormValue("retention_hours"))}
	in := observability.TracingInput{Mode: values["mode"], RetentionHours: store.Ptr(0)}
	if v := values["retention_hours"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return h.FormInvalid(c, r, "tracing", values, handlers.FieldErrors{"retention_hours": "A whole number of hours, or empty for the console's."}, "")
		}
		in.RetentionHours = &n
	}
	j, err := h.Ops.Observability.SetTracing(c.UserContext(), h.Actor(c), r, in)
	msg := ""
	if err == nil {
		msg = "Tracing saved; " + j.Title + " runs below."
	}
	return h.FormOutcome(c, r, "tracing", values, err, msg)
}

// TracingRemoveForm turns tracing off for the region from the Tracing tab.
func (h *Handlers) TracingRemoveForm(c *fiber.Ctx) error {
	return handlers.RegionFormAction(h.Handlers, c, "tracing", "Tracing is off for this region.", h.Ops.Observability.RemoveTracing)
}

// APISetTracing is PUT /api/observability/regions/{id}/tracing: the region's tracing mode.
func (h *Handlers) APISetTracing(c *fiber.Ctx) error {
	return handlers.RegionJobAPI(h.Handlers, c, h.Ops.Observability.SetTracing)
}

// APIRemoveTracing is DELETE /api/observability/regions/{id}/tracing: tracing off, the
// backend removed unless another region of the cluster uses it.
func (h *Handlers) APIRemoveTracing(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.Observability.RemoveTracing)
}
