package regions

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"runr.dev/console/handlers"
	"runr.dev/console/ops"
	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/redis"
	"runr.dev/console/ops/registry"
	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/views"
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

// KnativeForm runs one of the Knative actions from the Operator and Serving tabs.
func (h *Handlers) KnativeForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	kind, ok := knativeFormKinds[c.Params("action")]
	if !ok {
		return h.Fail(c, store.ErrNotFound)
	}
	tab := "serving"
	if strings.HasSuffix(kind, "operator") {
		tab = "operator"
	}
	version := c.FormValue("version")
	if version == "" {
		version = c.Query("version")
	}
	in := knative.Input{Version: version, Namespace: c.FormValue("namespace"), OperatorNamespace: c.FormValue("operator_namespace"),
		RemoveTraefik: c.FormValue("remove_traefik") == "1", IngressMode: c.FormValue("ingress_mode")}
	_, err = h.Ops.Knative.Start(c.UserContext(), h.Actor(c), r, kind, in)
	return h.FormOutcome(c, r, tab, map[string]string{"namespace": in.Namespace, "operator_namespace": in.OperatorNamespace, "ingress_mode": in.IngressMode}, err, "")
}

// RegistryForm sets up the registry (on a PVC when internal).
func (h *Handlers) RegistryForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	in := registry.Input{RegistryMode: store.RegistryMode(c.FormValue("registry_mode")), StorageType: "pvc", ExternalAddress: c.FormValue("external_address"),
		ExternalUsername: c.FormValue("external_username"), ExternalPassword: c.FormValue("external_password"),
		PVCConfig: registry.PVCConfig{StorageClass: c.FormValue("storage_class"), Size: c.FormValue("size")}}
	vals := map[string]string{"storage_class": in.PVCConfig.StorageClass, "size": in.PVCConfig.Size, "external_address": in.ExternalAddress, "external_username": in.ExternalUsername}
	_, err = h.Ops.Registry.Set(c.UserContext(), h.Actor(c), r, in)
	return h.FormOutcome(c, r, "registry", vals, err, "")
}

// RegistryDeleteForm removes the registry.
func (h *Handlers) RegistryDeleteForm(c *fiber.Ctx) error {
	return handlers.RegionFormAction(h.Handlers, c, "registry", "", h.Ops.Registry.Remove)
}

// RedisForm sets the region's Redis.
func (h *Handlers) RedisForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	in := redis.Input{Mode: store.RedisMode(c.FormValue("mode")), Address: strings.TrimSpace(c.FormValue("address")), Password: c.FormValue("password")}
	_, err = h.Ops.Redis.SetRedis(c.UserContext(), h.Actor(c), r, in)
	return h.FormOutcome(c, r, "redis", map[string]string{"mode": string(in.Mode), "address": in.Address}, err, "")
}

// RedisActionForm tests or removes the Redis.
func (h *Handlers) RedisActionForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	switch c.Params("action") {
	case "test":
		_, err = h.Ops.Redis.TestRedis(c.UserContext(), h.Actor(c), r)
	case "delete":
		_, err = h.Ops.Redis.RemoveRedis(c.UserContext(), h.Actor(c), r)
	default:
		return h.Fail(c, store.ErrNotFound)
	}
	return h.FormOutcome(c, r, "redis", nil, err, "")
}

// RemoveRegionPage asks for confirmation and whether what RunR installed goes first.
func (h *Handlers) RemoveRegionPage(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	if n, err := h.nonDemoProjects(c, r); err != nil {
		return h.Fail(c, err)
	} else if n > 0 {
		return h.FormInvalid(c, r, "general", nil, nil, "The region still has projects: delete them or move them to another region first.")
	}
	neighbours, err := h.Ops.Neighbours(c.UserContext(), r)
	if err != nil {
		return h.Fail(c, err)
	}
	return handlers.Render(c, fiber.StatusOK, views.RemoveRegion(h.Page(c, "Remove "+r.Name, "regions"), handlers.RegionView(r), neighbours, views.Form{}))
}

// nonDemoProjects is how many of r's projects are not demo projects.
func (h *Handlers) nonDemoProjects(c *fiber.Ctx, r *store.Region) (int, error) {
	demos, err := h.Store.DemoProjects(c.UserContext(), r.ID)
	return r.ProjectCount - len(demos), err
}

// RemoveRegionForm deletes the region's record, or queues the removal of what RunR
// installed followed by the record's (teardown=1) and shows that job.
func (h *Handlers) RemoveRegionForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	teardown := c.FormValue("teardown") != ""
	values := map[string]string{"confirm_name": strings.TrimSpace(c.FormValue("confirm_name"))}
	if teardown {
		values["teardown"] = "1"
	}
	page := func(f views.Form) error {
		f.Values = values
		neighbours, err := h.Ops.Neighbours(c.UserContext(), r)
		if err != nil {
			return h.Fail(c, err)
		}
		return handlers.Render(c, fiber.StatusUnprocessableEntity, views.RemoveRegion(h.Page(c, "Remove "+r.Name, "regions"), handlers.RegionView(r), neighbours, f))
	}
	// The name typed again confirms which region goes: a removal asked of the wrong tab
	// or with a slip of the hand changes nothing.
	if values["confirm_name"] != r.Name {
		return page(views.Form{Errors: map[string]string{"confirm_name": "Type " + r.Name + " exactly to remove this region."}})
	}
	if teardown {
		j, err := h.Ops.Teardown(c.UserContext(), h.Actor(c), r)
		if err != nil {
			if fe, msg, ok := h.Refusal(c, err); ok {
				return page(views.Form{Errors: fe, Error: msg})
			}
			return h.Fail(c, err)
		}
		h.Flash(c, "Removing what RunR installed on the cluster of "+r.Name+"; the region's record goes at the end.")
		return handlers.Redirect(c, "/jobs/"+j.ID)
	}
	// The console removes a record only once no project is left (the API and the CLI keep
	// the projects without a region); the demo projects go with the second choice.
	if r.ProjectCount > 0 {
		return page(views.Form{Error: fmt.Sprintf("The region still has %d project(s): delete them or move them to another region first, or choose to remove what RunR installed (it removes the demo projects).", r.ProjectCount)})
	}
	if err := h.Ops.DeleteRegion(c.UserContext(), h.Actor(c), r); err != nil {
		return h.Fail(c, err)
	}
	h.Flash(c, "Region "+r.Name+" removed. Everything on its cluster keeps running.")
	return handlers.Redirect(c, "/regions")
}

// CheckNowForm runs the region's status check now.
func (h *Handlers) CheckNowForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	h.Ops.Status.CheckSoon(r.ID)
	return h.FormDone(c, r, "general", "Status check started; the page shows its result in a few seconds.")
}

// APICheckNow is POST /api/knative-regions/{id}/check-status.
func (h *Handlers) APICheckNow(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	h.Ops.Status.CheckSoon(r.ID)
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"region_id": r.ID})
}

// knativeFormKinds are the Knative jobs of the Operator and Serving tabs, by the action in their path.
var knativeFormKinds = map[string]string{"install-operator": knative.KindInstallOperator, "install-serving": knative.KindInstallServing,
	"upgrade": knative.KindUpgradeServing, "uninstall-serving": knative.KindUninstallServing, "uninstall-operator": knative.KindUninstallOperator}
