package lifecycle

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/crypt"
	"runr.dev/console/handlers"
	"runr.dev/console/ops"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/preflight"
	"runr.dev/console/ops/registry"
	"runr.dev/console/perm"
	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/store/billingdb"
	"runr.dev/console/views"
)

// SealedStep1 carries what step 1 found to step 2 without storing anything: it is
// encrypted with the APP_KEY and posted back with the form.
type SealedStep1 struct {
	Name           string                       `json:"name"`
	Kubeconfig     string                       `json:"kubeconfig"`
	IsActive       bool                         `json:"is_active"`
	Server         string                       `json:"server"`
	Version        string                       `json:"version"`
	Nodes          []kit.NodeInfo               `json:"nodes"`
	StorageClasses []preflight.StorageClassInfo `json:"storage_classes"`
	ExpiresAt      time.Time                    `json:"expires_at"`
	// RegionMode is a platform administrator's choice (Tenancy module; "": managed).
	RegionMode store.RegionMode `json:"region_mode,omitempty"`
	// BillingType is the region's billing type (Billing module; "": pay as you go).
	BillingType string `json:"billing_type,omitempty"`
}

// sealedTTL is how long step 1's result may be posted back.
const sealedTTL = time.Hour

// sealedPurpose binds the sealed state to its use and its user (AEAD associated data):
// another user's state, or a value sealed for something else, does not open.
func sealedPurpose(userID string) string { return "runr-wizard-step1|" + userID }

// SealStep1 seals step 1's state for a user, valid for an hour.
func SealStep1(c *crypt.Cipher, userID string, v SealedStep1, now time.Time) string {
	v.ExpiresAt = now.Add(sealedTTL).UTC()
	raw, _ := json.Marshal(v)
	return c.Seal(string(raw), sealedPurpose(userID))
}

// UnsealStep1 opens step 1's state: only for the user it was sealed for, and before it expires.
func UnsealStep1(c *crypt.Cipher, userID, s string, now time.Time) (SealedStep1, error) {
	var v SealedStep1
	damaged := errors.New("the wizard's state is missing or damaged: start again from step 1")
	if len(s) > 1<<20 {
		return v, damaged
	}
	plain, err := c.Open(s, sealedPurpose(userID))
	if err != nil {
		return v, damaged
	}
	if err := json.Unmarshal([]byte(plain), &v); err != nil {
		return v, damaged
	}
	if v.ExpiresAt.IsZero() || now.After(v.ExpiresAt) {
		return v, errors.New("the wizard's state has expired: check the cluster again in step 1")
	}
	return v, nil
}

// noAgentAddress reports whether the console has no address to give the agents of a new
// region (RUNR_APP_URL, RUNR_AGENT_WS_URL): its Serving install would be refused at the
// agent step unless the region gets an agent address of its own.
func (h *Handlers) noAgentAddress() bool { return h.Cfg.AppURL == "" && h.Cfg.AgentWSURL == "" }

func (h *Handlers) seal(c *fiber.Ctx, v SealedStep1) string {
	return SealStep1(h.Store.Cipher, handlers.Who(c).User.ID, v, time.Now())
}

func (h *Handlers) unseal(c *fiber.Ctx, s string) (SealedStep1, error) {
	return UnsealStep1(h.Store.Cipher, handlers.Who(c).User.ID, s, time.Now())
}

// WizardNewPage is step 1 of Add Region.
func (h *Handlers) WizardNewPage(c *fiber.Ctx) error {
	f := views.Form{Values: map[string]string{"is_active": "1"}}
	return handlers.Render(c, fiber.StatusOK, views.WizardNew(h.Page(c, "Add Region", "regions"), h.step1Data(c, f, "", ""), nil))
}

// wizardModes offer the region mode in step 1 to a platform administrator (nil for anyone
// else: the field would be ignored).
func (h *Handlers) wizardModes(c *fiber.Ctx, chosen store.RegionMode) []views.Option {
	if !h.Ops.Tenancy.MaySetRegionMode(h.Actor(c)) {
		return nil
	}
	if !chosen.Valid() {
		chosen = store.RegionManaged
	}
	return handlers.OptionsOf(store.RegionModes, chosen)
}

// wizardBillingTypes offer the billing type in step 1 while the Billing module is on, to
// a user who holds billing.manage (nil for anyone else).
func (h *Handlers) wizardBillingTypes(c *fiber.Ctx, chosen string) []views.Option {
	if !h.Cfg.Billing || !h.Actor(c).Can(perm.BillingManage) {
		return nil
	}
	if chosen == "" {
		chosen = billingdb.PayAsYouGo
	}
	opts := handlers.OptionsOf([]string{billingdb.PayAsYouGo, billingdb.Fixed}, chosen)
	opts[0].Label, opts[1].Label = "Pay as you go", "Fixed resources"
	return opts
}

// step1Data is step 1's page data with the choices the user is offered.
func (h *Handlers) step1Data(c *fiber.Ctx, f views.Form, mode store.RegionMode, billingType string) views.Step1Data {
	return views.Step1Data{Form: f, Modes: h.wizardModes(c, mode), BillingTypes: h.wizardBillingTypes(c, billingType), NoAgentAddress: h.noAgentAddress()}
}

// kubeconfigFromForm reads the pasted kubeconfig, or the uploaded file.
func kubeconfigFromForm(c *fiber.Ctx) string {
	kc := c.FormValue("kubeconfig")
	if fh, err := c.FormFile("kubeconfig_file"); err == nil && fh.Size > 0 {
		if f, err := fh.Open(); err == nil {
			defer f.Close()
			raw, _ := io.ReadAll(io.LimitReader(f, 1<<20))
			kc = string(raw)
		}
	}
	return kc
}

// WizardCheck runs step 1: it validates, connects and shows the checklist; when every
// check passes it opens step 2.
func (h *Handlers) WizardCheck(c *fiber.Ctx) error {
	if fe := handlers.InputErrors(c, "kubeconfig", "name"); fe != nil {
		f := views.Form{Values: map[string]string{"is_active": "1"}, Errors: fe}
		return handlers.Render(c, fiber.StatusUnprocessableEntity, views.WizardNew(h.Page(c, "Add Region", "regions"), h.step1Data(c, f, "", ""), nil))
	}
	name := strings.TrimSpace(c.FormValue("name"))
	mode := store.RegionMode(c.FormValue("region_mode"))
	billingType := c.FormValue("billing_type")
	modes := h.wizardModes(c, mode)
	kc := kubeconfigFromForm(c)
	active := c.FormValue("is_active") == "1"
	f := views.Form{Values: map[string]string{"name": name, "kubeconfig": kc, "is_active": map[bool]string{true: "1", false: "0"}[active]}, Errors: map[string]string{}}
	page := h.Page(c, "Add Region", "regions")
	if modes != nil && mode != "" && !mode.Valid() {
		f.Errors["region_mode"] = "Choose managed or shared."
	}
	h.Ops.Billing.CheckNewRegionType(h.Actor(c), billingType, f.Errors)
	if len(f.Errors) > 0 {
		return handlers.Render(c, fiber.StatusUnprocessableEntity, views.WizardNew(page, h.step1Data(c, f, mode, billingType), nil))
	}
	chk, err := h.Ops.CheckNewRegion(c.UserContext(), ops.CheckInput{Name: name, Kubeconfig: kc})
	if fe, _, ok := h.Refusal(c, err); ok {
		f.Errors = fe
		return handlers.Render(c, fiber.StatusUnprocessableEntity, views.WizardNew(page, h.step1Data(c, f, mode, billingType), nil))
	} else if err != nil {
		return h.Fail(c, err)
	}
	d := h.step1Data(c, f, mode, billingType)
	d.Check = checkReport(chk)
	if !chk.OK {
		f.Error = "The cluster cannot become a region yet: " + chk.FirstFailure()
		d.Form = f
		return handlers.Render(c, fiber.StatusUnprocessableEntity, views.WizardNew(page, d, nil))
	}
	d.Form.Values["server"], d.Form.Values["version"] = chk.Server, chk.Version
	sealed := h.seal(c, SealedStep1{Name: name, Kubeconfig: string(chk.Kubeconfig), IsActive: active, Server: chk.Server,
		Version: chk.Version, Nodes: chk.Nodes, StorageClasses: chk.StorageClasses, RegionMode: mode, BillingType: billingType})
	d.Sealed = sealed
	next := &views.Step2Data{Form: views.Form{Values: map[string]string{}}, Sealed: sealed, Nodes: workerOptions(chk.Nodes),
		StorageClasses: storageClassOptions(chk.StorageClasses), Action: "/regions/new/setup", Submit: "Save & Next"}
	return handlers.Render(c, fiber.StatusOK, views.WizardNew(page, d, next))
}

// WizardEdit opens step 1 again, filled with what was checked, while step 2 is open:
// nothing was created yet, so the name (or the cluster) may still change.
func (h *Handlers) WizardEdit(c *fiber.Ctx) error {
	s, err := h.unseal(c, c.FormValue("sealed"))
	if err != nil {
		return h.Fail(c, &problem.Invalid{Fields: map[string]string{"sealed": err.Error()}})
	}
	f := views.Form{Values: map[string]string{"name": s.Name, "kubeconfig": s.Kubeconfig, "is_active": map[bool]string{true: "1", false: "0"}[s.IsActive]}}
	return handlers.Render(c, fiber.StatusOK, views.WizardNew(h.Page(c, "Add Region", "regions"), h.step1Data(c, f, s.RegionMode, s.BillingType), nil))
}

// step2Input reads the step 2 form into a setup.
func step2Input(c *fiber.Ctx, s SealedStep1) (*ops.SetupInput, views.Form) {
	args := c.Request().PostArgs()
	var nodes []string
	for _, v := range args.PeekMulti("nodes") {
		nodes = append(nodes, string(v))
	}
	if form, err := c.MultipartForm(); err == nil && len(nodes) == 0 {
		nodes = form.Value["nodes"]
	}
	in := &ops.SetupInput{
		RegionFields: ops.RegionFields{Name: s.Name, Kubeconfig: s.Kubeconfig, Nodes: nodes,
			PrometheusURL: strings.TrimSpace(c.FormValue("prometheus_url")), LokiURL: strings.TrimSpace(c.FormValue("loki_url")),
			LokiOrgID: c.FormValue("loki_org_id"), RedisMode: store.RedisMode(c.FormValue("redis_mode")), RedisAddress: strings.TrimSpace(c.FormValue("redis_address")),
			RedisPassword: c.FormValue("redis_password"), IsActive: &s.IsActive, RegionMode: &s.RegionMode, BillingType: s.BillingType,
			ConfirmBelowFloor: c.FormValue("confirm_below_floor") == "true"},
		Input: registry.Input{RegistryMode: store.RegistryMode(c.FormValue("registry_mode")),
			StorageType: c.FormValue("storage_type"), ExternalAddress: c.FormValue("external_address"),
			ExternalUsername: c.FormValue("external_username"), ExternalPassword: c.FormValue("external_password"),
			PVCConfig: registry.PVCConfig{StorageClass: c.FormValue("storage_class"), Size: c.FormValue("size")},
			S3Config: registry.S3Config{Endpoint: c.FormValue("s3_endpoint"), Bucket: c.FormValue("s3_bucket"), Region: c.FormValue("s3_region"),
				AccessKey: c.FormValue("s3_access_key"), SecretKey: c.FormValue("s3_secret_key")}},
	}
	f := views.Form{Values: map[string]string{
		"nodes": strings.Join(nodes, ","), "registry_mode": string(in.RegistryMode), "storage_type": in.StorageType,
		"storage_class": in.PVCConfig.StorageClass, "size": in.PVCConfig.Size, "s3_endpoint": in.S3Config.Endpoint,
		"s3_bucket": in.S3Config.Bucket, "s3_region": in.S3Config.Region, "s3_access_key": in.S3Config.AccessKey,
		"external_address": in.ExternalAddress, "external_username": in.ExternalUsername,
		"prometheus_url": in.PrometheusURL, "loki_url": in.LokiURL, "loki_org_id": in.LokiOrgID,
		"redis_mode": string(in.RedisMode), "redis_address": in.RedisAddress,
	}}
	return in, f
}

// WizardSetup runs "Save & Next" of step 2: it queues the region's setup.
func (h *Handlers) WizardSetup(c *fiber.Ctx) error {
	s, err := h.unseal(c, c.FormValue("sealed"))
	if err != nil {
		return h.Fail(c, &problem.Invalid{Fields: map[string]string{"sealed": err.Error()}})
	}
	in, f := step2Input(c, s)
	st, err := h.Ops.StartCheckedSetup(c.UserContext(), h.Actor(c), *in, s.Nodes)
	if fe, msg, ok := h.Refusal(c, err); ok {
		f.Errors, f.Error = fe, msg
		page := h.Page(c, "Add Region", "regions")
		d := views.Step1Data{Form: views.Form{Values: map[string]string{"name": s.Name, "server": s.Server, "version": s.Version}}, Sealed: c.FormValue("sealed")}
		next := &views.Step2Data{Form: f, Sealed: c.FormValue("sealed"), Nodes: workerOptions(s.Nodes), StorageClasses: storageClassOptions(s.StorageClasses), Action: "/regions/new/setup", Submit: "Save & Next"}
		return handlers.Render(c, fiber.StatusUnprocessableEntity, views.WizardNew(page, d, next))
	} else if err != nil {
		return h.Fail(c, err)
	}
	return handlers.Redirect(c, "/regions/setups/"+st.Token)
}

// WizardSetupPage shows a setup's live progress; a failed one offers its form again.
func (h *Handlers) WizardSetupPage(c *fiber.Ctx) error {
	st, err := h.Store.SetupByToken(c.UserContext(), c.Params("token"))
	if err != nil {
		return h.Fail(c, err)
	}
	jd, err := h.JobData(c.UserContext(), handlers.Who(c), *st.JobID)
	if err != nil {
		return h.Fail(c, err)
	}
	var p ops.SetupParams
	if err := json.Unmarshal(jd.Job.Params, &p); err != nil {
		return h.Fail(c, err)
	}
	jd.WizardStep = 2
	d := views.SetupData{Token: st.Token, Name: p.Name, Job: jd.View()}
	if jd.Job.Status == store.JobFailed || jd.Job.Status == store.JobCancelled {
		retry, err := h.retryForm(c, st, views.Form{Values: formOfParams(p)})
		if err != nil {
			return h.Fail(c, err)
		}
		d.Retry = retry
	}
	return handlers.Render(c, fiber.StatusOK, views.WizardSetup(h.Page(c, "Add Region", "regions"), d))
}

// retryForm is the step 2 form of a failed setup, to change its fields and retry.
func (h *Handlers) retryForm(c *fiber.Ctx, st *store.RegistrySetup, f views.Form) (*views.Step2Data, error) {
	_, _, sec, err := h.Ops.SetupOf(c.UserContext(), st)
	if err != nil {
		return nil, err
	}
	chk, err := h.Ops.Preflight.Check(c.UserContext(), "", []byte(sec.Kubeconfig), nil)
	if err != nil {
		return nil, err
	}
	return &views.Step2Data{Form: f, Nodes: workerOptions(chk.Nodes), StorageClasses: storageClassOptions(chk.StorageClasses),
		Action: "/regions/setups/" + st.Token + "/retry", Submit: "Retry with these settings"}, nil
}

func formOfParams(p ops.SetupParams) map[string]string {
	return map[string]string{"nodes": strings.Join(p.Nodes, ","), "registry_mode": string(p.Registry.Mode), "storage_type": p.Registry.StorageType,
		"storage_class": p.Registry.StorageClass, "size": p.Registry.Size, "s3_endpoint": p.Registry.S3Endpoint,
		"s3_bucket": p.Registry.S3Bucket, "s3_region": p.Registry.S3Region, "s3_access_key": p.Registry.S3AccessKey,
		"external_address": p.Registry.ExternalAddress, "external_username": p.Registry.ExternalUsername,
		"prometheus_url": p.Monitoring.PrometheusURL, "loki_url": p.Monitoring.LokiURL, "loki_org_id": p.Monitoring.LokiOrgID,
		"redis_mode": string(p.RedisMode), "redis_address": p.RedisAddress}
}

// WizardRetry changes a failed setup's step 2 fields and retries it; secrets left empty
// in the form keep their previous values.
func (h *Handlers) WizardRetry(c *fiber.Ctx) error {
	st, err := h.Store.SetupByToken(c.UserContext(), c.Params("token"))
	if err != nil {
		return h.Fail(c, err)
	}
	j, p, sec, err := h.Ops.SetupOf(c.UserContext(), st)
	if err != nil {
		return h.Fail(c, err)
	}
	in, f := step2Input(c, SealedStep1{Name: p.Name, Kubeconfig: sec.Kubeconfig, IsActive: p.IsActive})
	in.KeepSecrets(sec)
	_, err = h.Ops.RetrySetup(c.UserContext(), h.Actor(c), st, *in)
	if fe, msg, ok := h.Refusal(c, err); ok {
		f.Errors, f.Error = fe, msg
		retry, err := h.retryForm(c, st, f)
		if err != nil {
			return h.Fail(c, err)
		}
		jd, err := h.JobData(c.UserContext(), handlers.Who(c), j.ID)
		if err != nil {
			return h.Fail(c, err)
		}
		jd.WizardStep = 2
		return handlers.Render(c, fiber.StatusUnprocessableEntity, views.WizardSetup(h.Page(c, "Add Region", "regions"), views.SetupData{Token: st.Token, Name: p.Name, Job: jd.View(), Retry: retry}))
	} else if err != nil {
		return h.Fail(c, err)
	}
	return handlers.Redirect(c, "/regions/setups/"+st.Token)
}

// Handlers are the pages and endpoints that change what a region runs: the wizard and
// the setup API, Knative's lifecycle, the registry, moves, reconcile and the platform's
// settings.
type Handlers struct{ *handlers.Handlers }

// New builds the lifecycle's handlers and registers the Migration tab.
func New(h *handlers.Handlers) *Handlers {
	l := &Handlers{Handlers: h}
	h.AddTab("migration", l.migrationTab)
	h.AddTab("tracing", l.tracingTab)
	return l
}
