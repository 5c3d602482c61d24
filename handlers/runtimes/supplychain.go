package runtimes

import (
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/admission"
	"runr.dev/console/perm"
	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/supplychain"
	"runr.dev/console/views"
)

// supplyChainTab is the Supply chain tab: keys, the gate's requirements, the admission
// policy and its state, the data location and the latest verdicts.
func (h *Handlers) supplyChainTab(c *fiber.Ctx, r *store.Region) (templ.Component, error) {
	if !handlers.Who(c).Perms[perm.SupplyChainManage] {
		return nil, &problem.Refused{Reason: "The Supply chain tab needs the permission " + perm.SupplyChainManage + "."}
	}
	vs, err := h.Ops.Admission.RegionVerdicts(c.UserContext(), r)
	if err != nil {
		return nil, err
	}
	d := supplyChainView(r, vs)
	if f, ok := c.Locals(handlers.TabFormKey).(views.Form); ok {
		d.Form = f
		for k, to := range map[string]*string{"public_keys": &d.KeysText, "admission_images": &d.ImagesText, "data_location": &d.DataLocation} {
			if v, sent := f.Values[k]; sent {
				*to = v
			}
		}
	}
	if d.Busy, err = h.JobRunning(c, r.ID, admission.AdmissionKinds); err != nil {
		return nil, err
	}
	return views.SupplyChainTab(handlers.TabPage(c), d), nil
}

// supplyChainView builds the tab's view model of a region's settings and verdicts.
func supplyChainView(r *store.Region, vs []store.Verdict) views.SupplyChainData {
	sc := admission.SupplyChainOf(r)
	d := views.SupplyChainData{RegionID: r.ID, RequireSBOM: sc.RequireSBOM, RequireScan: sc.RequireScan,
		AdmissionEnabled: sc.Admission.Enabled, ImagesText: strings.Join(sc.Admission.Images, "\n"),
		AdmissionStatus: string(sc.State.Current()), AdmissionMessage: sc.State.Message, Adopted: sc.State.Adopted,
		PolicyName: admission.RegionPolicyName(r.Name), SystemPolicyName: admission.SystemPolicyName, SystemImages: admission.SystemImages,
		CanRemove: sc.Admission.Enabled || sc.State.Current() != store.ComponentNotInstalled, DataLocation: r.DataLocation,
		KeysText: strings.Join(sc.PublicKeys, "\n")}
	for _, k := range publicKeys(sc) {
		d.Keys = append(d.Keys, views.PublicKeyView{ID: k.ID, PEM: k.PEM})
	}
	for _, s := range supplychain.Severities {
		d.Severities = append(d.Severities, views.Option{Value: s, Label: s, Selected: s == sc.FailSeverity})
	}
	for _, m := range []store.AdmissionMode{store.AdmissionEnforce, store.AdmissionWarn} {
		label := map[store.AdmissionMode]string{store.AdmissionEnforce: "enforce: refuse unsigned images", store.AdmissionWarn: "warn: admit them with a warning"}[m]
		d.Modes = append(d.Modes, views.Option{Value: string(m), Label: label, Selected: m == sc.Admission.Mode})
	}
	for _, v := range vs {
		d.Verdicts = append(d.Verdicts, views.VerdictView{Project: v.Project, Image: v.Image, Digest: v.Digest,
			Accepted: v.Verdict == store.VerdictAccepted, Reason: v.Reason, Evidence: verdictEvidence(v.Detail.V), At: v.At})
	}
	return d
}

// verdictEvidence says what an accepted image showed.
func verdictEvidence(d store.VerdictDetail) string {
	var parts []string
	if d.SignedBy != "" {
		parts = append(parts, "signed with key "+d.SignedBy)
	}
	if d.SBOM != "" {
		parts = append(parts, "SBOM "+d.SBOM)
	}
	if d.Scanner != "" {
		parts = append(parts, "scan "+d.Scanner)
	}
	return strings.Join(parts, "; ")
}

// publicKeys are the region's keys that parse (all of them: they were checked when set).
func publicKeys(sc store.SupplyChain) []supplychain.Key {
	var out []supplychain.Key
	for _, p := range sc.PublicKeys {
		if k, err := supplychain.ParseKey(p); err == nil {
			out = append(out, k)
		}
	}
	return out
}

// splitPEM cuts a text of PEM blocks into one entry per block; text outside blocks
// stays an entry of its own, so that it is refused rather than dropped.
func splitPEM(text string) []string {
	var out []string
	for {
		text = strings.TrimSpace(text)
		if text == "" {
			return out
		}
		end := strings.Index(text, "-----END ")
		if end < 0 {
			return append(out, text)
		}
		stop := strings.Index(text[end+9:], "-----")
		if stop < 0 {
			return append(out, text)
		}
		cut := end + 9 + stop + 5
		out = append(out, text[:cut])
		text = text[cut:]
	}
}

// lines are a textarea's non-empty lines, trimmed.
func lines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// SupplyChainForm saves the Supply chain tab.
func (h *Handlers) SupplyChainForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	values := map[string]string{"public_keys": c.FormValue("public_keys"), "admission_images": c.FormValue("admission_images"),
		"data_location": c.FormValue("data_location")}
	in := admission.SupplyChainInput{PublicKeys: store.Ptr(splitPEM(values["public_keys"])), RequireSBOM: store.Ptr(c.FormValue("require_sbom") == "true"),
		RequireScan: store.Ptr(c.FormValue("require_scan") == "true"), FailSeverity: store.Ptr(c.FormValue("fail_severity")),
		Admission: store.Ptr(c.FormValue("admission") == "true"), AdmissionMode: store.Ptr(c.FormValue("admission_mode")),
		AdmissionImages: store.Ptr(lines(values["admission_images"])), DataLocation: store.Ptr(values["data_location"])}
	ch, err := h.Ops.Admission.SetSupplyChain(c.UserContext(), h.Actor(c), r, in)
	msg := "Supply chain settings saved."
	if err == nil && ch.Job != nil {
		msg = "Supply chain settings saved; " + strings.ToLower(ch.Job.Title[:1]) + ch.Job.Title[1:] + " runs below."
	}
	return h.FormOutcome(c, r, "supply-chain", values, err, msg)
}

// AdmissionRemoveForm removes the admission policy from the Supply chain tab.
func (h *Handlers) AdmissionRemoveForm(c *fiber.Ctx) error {
	return handlers.RegionFormAction(h.Handlers, c, "supply-chain", "", h.Ops.Admission.RemoveAdmission)
}

// supplyChainJSON is a region's supply chain as the API answers it (public keys are
// public; nothing secret is in it).
func supplyChainJSON(r *store.Region, sc store.SupplyChain, loc string, vs []store.Verdict) fiber.Map {
	keys := []fiber.Map{}
	for _, k := range publicKeys(sc) {
		keys = append(keys, fiber.Map{"id": k.ID, "pem": k.PEM})
	}
	return fiber.Map{"region_id": r.ID, "region": r.Name, "public_keys": keys, "require_sbom": sc.RequireSBOM,
		"require_scan": sc.RequireScan, "fail_severity": sc.FailSeverity, "data_location": loc,
		"admission": fiber.Map{"enabled": sc.Admission.Enabled, "mode": sc.Admission.Mode, "images": orEmpty(sc.Admission.Images),
			"status": sc.State.Current(), "message": sc.State.Message, "adopted": sc.State.Adopted, "updated_at": timeOrNil(sc.State.UpdatedAt),
			"policy": admission.RegionPolicyName(r.Name), "system_policy": admission.SystemPolicyName, "system_images": admission.SystemImages},
		"verdicts": vs}
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// APISupplyChain is GET /api/knative-regions/{id}/supply-chain.
func (h *Handlers) APISupplyChain(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	vs, err := h.Ops.Admission.RegionVerdicts(c.UserContext(), r)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(supplyChainJSON(r, admission.SupplyChainOf(r), r.DataLocation, vs))
}

// APIPutSupplyChain is PUT /api/knative-regions/{id}/supply-chain: 422 with field errors
// and nothing stored when a field is wrong; the answer names the job that applies or
// removes the admission policy when one was queued (job_id).
func (h *Handlers) APIPutSupplyChain(c *fiber.Ctx) error {
	r, in, err := handlers.RegionBody[admission.SupplyChainInput](h.Handlers, c)
	if err != nil {
		return h.Fail(c, err)
	}
	ch, err := h.Ops.Admission.SetSupplyChain(c.UserContext(), h.Actor(c), r, in)
	if err != nil {
		return h.Fail(c, err)
	}
	vs, err := h.Ops.Admission.RegionVerdicts(c.UserContext(), r)
	if err != nil {
		return h.Fail(c, err)
	}
	out := supplyChainJSON(r, ch.Settings, ch.DataLocation, vs)
	if ch.Job != nil {
		out["job_id"] = ch.Job.ID
	}
	return c.JSON(out)
}

// APIRemoveAdmission is DELETE /api/knative-regions/{id}/supply-chain/admission: the
// region's policy leaves the cluster; its settings stay.
func (h *Handlers) APIRemoveAdmission(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.Admission.RemoveAdmission)
}
