package handlers

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/agent"
	"runr.dev/console/engine"
	"runr.dev/console/ops"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// tabKinds are the job kinds whose latest job a tab shows live.
var tabKinds = map[string][]string{
	"general":  {ops.KindApplySettings, ops.KindRegionStatus, ops.KindFunctionTLS, ops.KindRemoveFunctionTLS, ops.KindInstallMonitoring},
	"registry": {ops.KindRegistrySetup, ops.KindRegistryInstall, ops.KindRegistryRemove, ops.KindRegistryTest, ops.KindContainerdRestart},
	"operator": {ops.KindInstallOperator, ops.KindInstallKnative, ops.KindUninstallOperator},
	"serving":  {ops.KindInstallServing, ops.KindInstallKnative, ops.KindUpgradeServing, ops.KindUninstallServing, ops.KindUninstallKnative},
	"redis":    {ops.KindRedisInstall, ops.KindRedisRemove, ops.KindRedisTest},
	"workers":  {ops.KindApplyWorkers, ops.KindRegionInit},
}

// IsRegionTab reports whether t names a tab of the region page.
func IsRegionTab(t string) bool { return validTab(t) == t }

func validTab(t string) string {
	for _, x := range views.RegionTabs {
		if x.Key == t {
			return t
		}
	}
	return "general"
}

// regionPageData loads what a tab shows.
func (h *Handlers) regionPageData(c *fiber.Ctx, r *store.Region, tab string, f views.Form) (views.RegionPageData, error) {
	base, err := h.Store.BaseDomain(ctx(c))
	if err != nil {
		return views.RegionPageData{}, err
	}
	domain := KnativeDomain(r, base)
	d := views.RegionPageData{Region: regionView(r), Domain: domain, DNSInstruction: DNSInstruction(domain, r.ExternalIP), Tab: tab, Form: f}
	if kinds, ok := tabKinds[tab]; ok {
		if j, err := h.Store.LatestJobOf(ctx(c), r.ID, kinds); err == nil {
			jd, err := h.JobData(ctx(c), Who(c), j.ID)
			if err != nil {
				return d, err
			}
			jd.Tab = tab
			d.Job = jd.panel()
		} else if !isNotFoundErr(err) {
			return d, err
		}
	}
	if tab == "operator" || tab == "serving" {
		// A chart repository that cannot be read leaves the form without versions; the
		// install then names the problem.
		vs, _ := h.compatible(c, r)
		d.Versions = versionOptions(vs)
		if r.ServingStatus == store.ComponentReady {
			if next, _ := h.Kube.NextMinor(ctx(c), r.KnativeVersion, k8sMinor(r)); next != nil {
				d.NextVersion = next.Version
			}
		}
	}
	if tab == "general" {
		raw, at, err := h.Store.LatestSnapshot(ctx(c), r.ID)
		if err != nil {
			return d, err
		}
		if raw != nil {
			var snap agent.Snapshot
			if json.Unmarshal(raw, &snap) == nil {
				d.Usage = usageOf(&snap, at)
			}
		}
	}
	if ex, ok := h.extraTabs[tab]; ok {
		comp, err := ex(c, r)
		if err != nil {
			return d, err
		}
		d.Extra = comp
	}
	return d, nil
}

// RegionPage is the region page with its tabs.
func (h *Handlers) RegionPage(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	tab := c.Query("tab")
	if tab == "" && r.Health.V.API.State == store.HealthDown {
		// A region whose cluster no longer answers opens on its Migration tab.
		tab = "migration"
	}
	return h.renderRegion(c, r, validTab(tab), views.Form{}, fiber.StatusOK)
}

func (h *Handlers) renderRegion(c *fiber.Ctx, r *store.Region, tab string, f views.Form, status int) error {
	d, err := h.regionPageData(c, r, tab, f)
	if err != nil {
		return h.Fail(c, err)
	}
	return Render(c, status, views.RegionPage(h.page(c, r.Name, "regions"), d))
}

// RegionTab is a tab's body, swapped in by htmx.
func (h *Handlers) RegionTab(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	d, err := h.regionPageData(c, r, validTab(c.Params("tab")), views.Form{})
	if err != nil {
		return h.Fail(c, err)
	}
	return Render(c, fiber.StatusOK, views.RegionTabBody(h.page(c, r.Name, "regions"), d))
}

// regionForm loads the region of a form post.
func (h *Handlers) regionForm(c *fiber.Ctx) (*store.Region, error) {
	return h.Store.RegionByID(ctx(c), c.Params("id"))
}

func (h *Handlers) formDone(c *fiber.Ctx, r *store.Region, tab, flash string) error {
	if flash != "" {
		h.flash(c, flash)
	}
	// A form of the wizard returns to the wizard.
	if strings.Contains(c.Get("Referer"), "/regions/"+r.ID+"/wizard") {
		return redirect(c, "/regions/"+r.ID+"/wizard")
	}
	return redirect(c, "/regions/"+r.ID+"?tab="+tab)
}

func (h *Handlers) formInvalid(c *fiber.Ctx, r *store.Region, tab string, values map[string]string, errs FieldErrors, msg string) error {
	f := views.Form{Values: values, Errors: errs, Error: msg}
	if msg == "" && len(errs) > 0 {
		f.Error = "Some fields need another look."
	}
	return h.renderRegion(c, r, tab, f, fiber.StatusUnprocessableEntity)
}

// SettingsForm saves the General settings.
func (h *Handlers) SettingsForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	vals := map[string]string{"request_timeout": c.FormValue("request_timeout"), "agent_ws_url": c.FormValue("agent_ws_url"), "ingress_trusted_ips": c.FormValue("ingress_trusted_ips")}
	in := SettingsInput{}
	n, err := strconv.Atoi(strings.TrimSpace(vals["request_timeout"]))
	if err != nil {
		return h.formInvalid(c, r, "general", vals, FieldErrors{"request_timeout": "Use a whole number of seconds."}, "")
	}
	in.RequestTimeout = &n
	ws := strings.TrimSpace(vals["agent_ws_url"])
	in.AgentWSURL = &ws
	ips := []string{}
	for _, p := range strings.Split(vals["ingress_trusted_ips"], ",") {
		if p = strings.TrimSpace(p); p != "" {
			ips = append(ips, p)
		}
	}
	in.IngressTrustedIPs = &ips
	j, fe, err := h.updateSettings(c, r, in)
	if err != nil {
		return h.Fail(c, err)
	}
	if fe != nil {
		return h.formInvalid(c, r, "general", vals, fe, "")
	}
	msg := "Settings saved."
	if j != nil {
		msg = "Settings saved; they are being applied to the cluster."
	}
	return h.formDone(c, r, "general", msg)
}

// StatusForm sets the region status.
func (h *Handlers) StatusForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	_, fe, err := h.setStatus(c, r, store.RegionStatus(c.FormValue("region_status")))
	if err != nil {
		return h.Fail(c, err)
	}
	if fe != nil {
		return h.formInvalid(c, r, "general", nil, fe, fe["region_status"])
	}
	return h.formDone(c, r, "general", "Region status set to "+c.FormValue("region_status")+".")
}

// FunctionTLSForm uploads a function-domain certificate.
func (h *Handlers) FunctionTLSForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	in := TLSInput{Certificate: c.FormValue("certificate"), PrivateKey: c.FormValue("private_key"), ReplaceExisting: c.FormValue("replace_existing") == "1"}
	_, fe, msg, err := h.setFunctionTLS(c, r, in)
	if err != nil {
		return h.Fail(c, err)
	}
	if fe != nil || msg != "" {
		return h.formInvalid(c, r, "general", map[string]string{"certificate": in.Certificate}, fe, msg)
	}
	return h.formDone(c, r, "general", "Certificate uploaded; it is being installed.")
}

// DeleteFunctionTLSForm removes the certificate.
func (h *Handlers) DeleteFunctionTLSForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	if _, err := h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindRemoveFunctionTLS, Title: "Remove the function-domain certificate of " + r.Name,
		Subject: r.ID, CreatedBy: Who(c).User.Email}); err != nil {
		return h.Fail(c, err)
	}
	return h.formDone(c, r, "general", "The certificate is being removed.")
}

// MonitoringForm saves the monitoring choice.
func (h *Handlers) MonitoringForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	vals := map[string]string{}
	raw := map[string]json.RawMessage{}
	for _, k := range []string{"prometheus_url", "loki_url", "loki_org_id"} {
		vals[k] = strings.TrimSpace(c.FormValue(k))
		b, _ := json.Marshal(vals[k])
		raw[k] = b
	}
	_, fe, err := h.updateMonitoring(c, r, raw)
	if err != nil {
		return h.Fail(c, err)
	}
	if fe != nil {
		return h.formInvalid(c, r, "general", vals, fe, "")
	}
	return h.formDone(c, r, "general", "Monitoring saved.")
}

// KnativeForm runs one of the Knative actions from the Operator and Serving tabs.
func (h *Handlers) KnativeForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	kinds := map[string]string{"install-operator": ops.KindInstallOperator, "install-serving": ops.KindInstallServing,
		"upgrade": ops.KindUpgradeServing, "uninstall-serving": ops.KindUninstallServing, "uninstall-operator": ops.KindUninstallOperator}
	kind, ok := kinds[c.Params("action")]
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
	in := KnativeInput{Version: version, Namespace: c.FormValue("namespace"), OperatorNamespace: c.FormValue("operator_namespace"),
		RemoveTraefik: c.FormValue("remove_traefik") == "1", IngressMode: c.FormValue("ingress_mode")}
	_, fe, msg, err := h.enqueueKnative(c, r, kind, in)
	if err != nil {
		return h.Fail(c, err)
	}
	if fe != nil || msg != "" {
		return h.formInvalid(c, r, tab, map[string]string{"namespace": in.Namespace, "operator_namespace": in.OperatorNamespace, "ingress_mode": in.IngressMode}, fe, msg)
	}
	return h.formDone(c, r, tab, "")
}

// RegistryForm sets up the registry; RegistryDeleteForm removes it.
func (h *Handlers) RegistryForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	in := RegistryInput{RegistryMode: store.RegistryMode(c.FormValue("registry_mode")), StorageType: "pvc", ExternalAddress: c.FormValue("external_address"),
		ExternalUsername: c.FormValue("external_username"), ExternalPassword: c.FormValue("external_password")}
	in.PVCConfig.StorageClass, in.PVCConfig.Size = c.FormValue("storage_class"), c.FormValue("size")
	p, sec := in.params()
	errs := FieldErrors{}
	ValidateRegistry(p, sec, errs)
	vals := map[string]string{"storage_class": in.PVCConfig.StorageClass, "size": in.PVCConfig.Size, "external_address": in.ExternalAddress, "external_username": in.ExternalUsername}
	if len(errs) > 0 {
		return h.formInvalid(c, r, "registry", vals, errs, "")
	}
	if _, err := h.enqueueRegistry(c, r, p, sec); err != nil {
		return h.Fail(c, err)
	}
	return h.formDone(c, r, "registry", "")
}

// RegistryDeleteForm removes the registry.
func (h *Handlers) RegistryDeleteForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	if _, err := h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindRegistryRemove, Title: "Remove the registry of " + r.Name,
		Subject: r.ID, CreatedBy: Who(c).User.Email}); err != nil {
		return h.Fail(c, err)
	}
	if err := h.Store.UpdateRegistry(ctx(c), r.ID, store.RegistryUpdate{Status: store.Ptr(store.ComponentRemoving)}); err != nil {
		return h.Fail(c, err)
	}
	return h.formDone(c, r, "registry", "")
}

// RedisForm sets the region's Redis.
func (h *Handlers) RedisForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	in := RedisInput{Mode: store.RedisMode(c.FormValue("mode")), Address: strings.TrimSpace(c.FormValue("address")), Password: c.FormValue("password")}
	_, fe, err := h.enqueueRedis(c, r, in)
	if err != nil {
		return h.Fail(c, err)
	}
	if fe != nil {
		return h.formInvalid(c, r, "redis", map[string]string{"address": in.Address}, fe, "")
	}
	return h.formDone(c, r, "redis", "")
}

// RedisActionForm tests or removes the Redis.
func (h *Handlers) RedisActionForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	req := engine.Request{Subject: r.ID, CreatedBy: Who(c).User.Email}
	switch c.Params("action") {
	case "test":
		req.Kind, req.Title = ops.KindRedisTest, "Test the Redis of "+r.Name
	case "delete":
		req.Kind, req.Title = ops.KindRedisRemove, "Remove the Redis of "+r.Name
	default:
		return h.Fail(c, store.ErrNotFound)
	}
	if _, err := h.Kube.Enqueue(ctx(c), req); err != nil {
		return h.Fail(c, err)
	}
	return h.formDone(c, r, "redis", "")
}

// RemoveRegionPage asks for confirmation, listing what stays on the cluster.
func (h *Handlers) RemoveRegionPage(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	if r.ProjectCount > 0 {
		return h.formInvalid(c, r, "general", nil, nil, "The region still has projects: delete them or move them to another region first.")
	}
	return Render(c, fiber.StatusOK, views.RemoveRegion(h.page(c, "Remove "+r.Name, "regions"), regionView(r)))
}

// RemoveRegionForm deletes the region's record.
func (h *Handlers) RemoveRegionForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	if err := h.Store.DeleteRegion(ctx(c), r.ID); err != nil {
		var hp *store.HasProjectsError
		if errors.As(err, &hp) {
			return h.formInvalid(c, r, "general", nil, nil, hp.Error())
		}
		return h.Fail(c, err)
	}
	h.Log.Info("region removed", "region", r.Name, "user", Who(c).User.Email)
	h.flash(c, "Region "+r.Name+" removed. Everything on its cluster keeps running.")
	return redirect(c, "/regions")
}

// CheckNowForm runs the region's status check now.
func (h *Handlers) CheckNowForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	h.Kube.CheckSoon(r.ID)
	return h.formDone(c, r, "general", "Status check started; the page shows its result in a few seconds.")
}

// APICheckNow is POST /api/knative-regions/{id}/check-status.
func (h *Handlers) APICheckNow(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	h.Kube.CheckSoon(r.ID)
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"region_id": r.ID})
}
