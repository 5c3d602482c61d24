package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// SealedStep1 carries what step 1 found to step 2 without storing anything: it is
// encrypted with the APP_KEY and posted back with the form.
type SealedStep1 struct {
	Name           string                 `json:"name"`
	Kubeconfig     string                 `json:"kubeconfig"`
	IsActive       bool                   `json:"is_active"`
	Server         string                 `json:"server"`
	Version        string                 `json:"version"`
	Nodes          []ops.NodeInfo         `json:"nodes"`
	StorageClasses []ops.StorageClassInfo `json:"storage_classes"`
	ExpiresAt      time.Time              `json:"expires_at"`
}

// sealedTTL is how long step 1's result may be posted back.
const sealedTTL = time.Hour

// sealedPurpose binds the sealed state to its use and its user (AEAD associated data):
// another user's state, or a value sealed for something else, does not open.
func sealedPurpose(userID string) string { return "runr-wizard-step1|" + userID }

// SealStep1 seals step 1's state for a user, valid for an hour.
func SealStep1(c *store.Cipher, userID string, v SealedStep1, now time.Time) string {
	v.ExpiresAt = now.Add(sealedTTL).UTC()
	raw, _ := json.Marshal(v)
	return c.Seal(string(raw), sealedPurpose(userID))
}

// UnsealStep1 opens step 1's state: only for the user it was sealed for, and before it expires.
func UnsealStep1(c *store.Cipher, userID, s string, now time.Time) (SealedStep1, error) {
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

func (h *Handlers) seal(c *fiber.Ctx, v SealedStep1) string {
	return SealStep1(h.Store.Cipher, Who(c).User.ID, v, time.Now())
}

func (h *Handlers) unseal(c *fiber.Ctx, s string) (SealedStep1, error) {
	return UnsealStep1(h.Store.Cipher, Who(c).User.ID, s, time.Now())
}

// WizardNewPage is step 1 of Add Region.
func (h *Handlers) WizardNewPage(c *fiber.Ctx) error {
	f := views.Form{Values: map[string]string{"is_active": "1"}}
	return Render(c, fiber.StatusOK, views.WizardNew(h.page(c, "Add Region", "regions"), views.Step1Data{Form: f}, nil))
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
	if fe := inputErrors(c, "kubeconfig", "name"); fe != nil {
		f := views.Form{Values: map[string]string{"is_active": "1"}, Errors: fe}
		return Render(c, fiber.StatusUnprocessableEntity, views.WizardNew(h.page(c, "Add Region", "regions"), views.Step1Data{Form: f}, nil))
	}
	name := strings.TrimSpace(c.FormValue("name"))
	kc := kubeconfigFromForm(c)
	active := c.FormValue("is_active") == "1"
	f := views.Form{Values: map[string]string{"name": name, "kubeconfig": kc, "is_active": map[bool]string{true: "1", false: "0"}[active]}, Errors: map[string]string{}}
	page := h.page(c, "Add Region", "regions")
	if m := ValidateRegionName(name); m != "" {
		f.Errors["name"] = m
	} else if taken, err := h.regionNameTaken(c, name); err != nil {
		return h.Fail(c, err)
	} else if taken {
		f.Errors["name"] = "A region with this name exists already."
	}
	if _, err := kube.ParseKubeconfig([]byte(kc)); err != nil {
		f.Errors["kubeconfig"] = err.Error()
	}
	if len(f.Errors) > 0 {
		return Render(c, fiber.StatusUnprocessableEntity, views.WizardNew(page, views.Step1Data{Form: f}, nil))
	}
	chk, err := h.Kube.CheckCluster(ctx(c), name, []byte(kc), nil)
	if err != nil {
		return h.Fail(c, err)
	}
	d := views.Step1Data{Form: f, Check: checkReport(chk)}
	if !chk.OK {
		f.Error = "The cluster cannot become a region yet: " + chk.FirstFailure()
		d.Form = f
		return Render(c, fiber.StatusUnprocessableEntity, views.WizardNew(page, d, nil))
	}
	d.Form.Values["server"], d.Form.Values["version"] = chk.Server, chk.Version
	sealed := h.seal(c, SealedStep1{Name: name, Kubeconfig: string(chk.Kubeconfig), IsActive: active, Server: chk.Server,
		Version: chk.Version, Nodes: chk.Nodes, StorageClasses: chk.StorageClasses})
	next := &views.Step2Data{Form: views.Form{Values: map[string]string{}}, Sealed: sealed, Nodes: workerOptions(chk.Nodes),
		StorageClasses: storageClassOptions(chk.StorageClasses), Action: "/regions/new/setup", Submit: "Save & Next"}
	return Render(c, fiber.StatusOK, views.WizardNew(page, d, next))
}

func (h *Handlers) regionNameTaken(c *fiber.Ctx, name string) (bool, error) {
	_, err := h.Store.RegionByName(ctx(c), name)
	if err == nil {
		return true, nil
	}
	if !isNotFoundErr(err) {
		return false, err
	}
	return h.Store.NameTakenBySetup(ctx(c), name, "")
}

// step2Input reads the step 2 form into a setup.
func step2Input(c *fiber.Ctx, s SealedStep1) (*SetupInput, views.Form) {
	args := c.Request().PostArgs()
	var nodes []string
	for _, v := range args.PeekMulti("nodes") {
		nodes = append(nodes, string(v))
	}
	if form, err := c.MultipartForm(); err == nil && len(nodes) == 0 {
		nodes = form.Value["nodes"]
	}
	in := &SetupInput{Name: s.Name, Kubeconfig: s.Kubeconfig, Nodes: nodes, RegistryMode: store.RegistryMode(c.FormValue("registry_mode")),
		StorageType: c.FormValue("storage_type"), ExternalAddress: c.FormValue("external_address"),
		ExternalUsername: c.FormValue("external_username"), ExternalPassword: c.FormValue("external_password"),
		PrometheusURL: strings.TrimSpace(c.FormValue("prometheus_url")), LokiURL: strings.TrimSpace(c.FormValue("loki_url")),
		LokiOrgID: c.FormValue("loki_org_id"), RedisMode: store.RedisMode(c.FormValue("redis_mode")), RedisAddress: strings.TrimSpace(c.FormValue("redis_address")),
		RedisPassword: c.FormValue("redis_password"), IsActive: &s.IsActive}
	in.PVCConfig.StorageClass, in.PVCConfig.Size = c.FormValue("storage_class"), c.FormValue("size")
	in.S3Config.Endpoint, in.S3Config.Bucket, in.S3Config.Region = c.FormValue("s3_endpoint"), c.FormValue("s3_bucket"), c.FormValue("s3_region")
	in.S3Config.AccessKey, in.S3Config.SecretKey = c.FormValue("s3_access_key"), c.FormValue("s3_secret_key")
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
		return h.Fail(c, FieldErrors{"sealed": err.Error()})
	}
	in, f := step2Input(c, s)
	errs := in.Validate()
	if errs == nil {
		errs = FieldErrors{}
	}
	chk := &ops.CheckResult{Nodes: s.Nodes}
	if m := nodesExist(in.Nodes, chk); m != "" {
		errs["nodes"] = m
	}
	page := h.page(c, "Add Region", "regions")
	if len(errs) > 0 {
		f.Errors = errs
		d := views.Step1Data{Form: views.Form{Values: map[string]string{"name": s.Name, "server": s.Server, "version": s.Version}}}
		next := &views.Step2Data{Form: f, Sealed: c.FormValue("sealed"), Nodes: workerOptions(s.Nodes), StorageClasses: storageClassOptions(s.StorageClasses), Action: "/regions/new/setup", Submit: "Save & Next"}
		return Render(c, fiber.StatusUnprocessableEntity, views.WizardNew(page, d, next))
	}
	st, err := h.startSetup(c, in)
	if err != nil {
		return h.Fail(c, err)
	}
	return redirect(c, "/regions/setups/"+st.Token)
}

// startSetup queues a registry-setup job and records its setup. The name is checked
// again under a lock on it: a replayed or doubled form never starts two setups of one name.
func (h *Handlers) startSetup(c *fiber.Ctx, in *SetupInput) (*store.RegistrySetup, error) {
	p, sec := in.Params()
	raw, err := json.Marshal(sec)
	if err != nil {
		return nil, fmt.Errorf("start setup: %w", err)
	}
	var st *store.RegistrySetup
	err = h.Store.WithNameLock(ctx(c), in.Name, func() error {
		taken, err := h.regionNameTaken(c, in.Name)
		if err != nil {
			return err
		}
		if taken {
			return FieldErrors{"name": "A region or a setup of this name exists already."}
		}
		j, err := h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindRegistrySetup, Title: "Create region " + in.Name + " with its registry",
			Params: p, Secret: string(raw), CreatedBy: Who(c).User.Email})
		if err != nil {
			return err
		}
		st, err = h.Store.CreateSetup(ctx(c), j.ID, Who(c).User.Email)
		return err
	})
	return st, err
}

// WizardSetupPage shows a setup's live progress; a failed one offers its form again.
func (h *Handlers) WizardSetupPage(c *fiber.Ctx) error {
	st, err := h.Store.SetupByToken(ctx(c), c.Params("token"))
	if err != nil {
		return h.Fail(c, err)
	}
	jd, err := h.JobData(ctx(c), Who(c), *st.JobID)
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
		retry, err := h.retryForm(c, st, p, views.Form{Values: formOfParams(p)})
		if err != nil {
			return h.Fail(c, err)
		}
		d.Retry = retry
	}
	return Render(c, fiber.StatusOK, views.WizardSetup(h.page(c, "Add Region", "regions"), d))
}

// retryForm is the step 2 form of a failed setup, to change its fields and retry.
func (h *Handlers) retryForm(c *fiber.Ctx, st *store.RegistrySetup, p ops.SetupParams, f views.Form) (*views.Step2Data, error) {
	j, err := h.Store.JobByID(ctx(c), *st.JobID)
	if err != nil {
		return nil, err
	}
	secRaw, err := h.Store.JobSecret(j)
	if err != nil {
		return nil, err
	}
	var sec ops.SetupSecret
	_ = json.Unmarshal([]byte(secRaw), &sec)
	chk, err := h.Kube.CheckCluster(ctx(c), "", []byte(sec.Kubeconfig), nil)
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

// WizardRetry changes a failed setup's step 2 fields and retries it.
func (h *Handlers) WizardRetry(c *fiber.Ctx) error {
	st, err := h.Store.SetupByToken(ctx(c), c.Params("token"))
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Store.JobByID(ctx(c), *st.JobID)
	if err != nil {
		return h.Fail(c, err)
	}
	var p ops.SetupParams
	if err := json.Unmarshal(j.Params, &p); err != nil {
		return h.Fail(c, err)
	}
	secRaw, err := h.Store.JobSecret(j)
	if err != nil {
		return h.Fail(c, err)
	}
	var sec ops.SetupSecret
	_ = json.Unmarshal([]byte(secRaw), &sec)
	in, f := step2Input(c, SealedStep1{Name: p.Name, Kubeconfig: sec.Kubeconfig, IsActive: p.IsActive})
	// Secrets left empty in the form keep their previous values.
	keepSecrets(in, sec)
	if errs := in.Validate(); errs != nil {
		f.Errors = errs
		retry, err := h.retryForm(c, st, p, f)
		if err != nil {
			return h.Fail(c, err)
		}
		jd, err := h.JobData(ctx(c), Who(c), j.ID)
		if err != nil {
			return h.Fail(c, err)
		}
		jd.WizardStep = 2
		return Render(c, fiber.StatusUnprocessableEntity, views.WizardSetup(h.page(c, "Add Region", "regions"), views.SetupData{Token: st.Token, Name: p.Name, Job: jd.View(), Retry: retry}))
	}
	if err := h.retrySetup(c, st, j, in); err != nil {
		return h.Fail(c, err)
	}
	return redirect(c, "/regions/setups/"+st.Token)
}

func keepSecrets(in *SetupInput, old ops.SetupSecret) {
	if in.S3Config.SecretKey == "" {
		in.S3Config.SecretKey = old.Registry.S3SecretKey
	}
	if in.ExternalPassword == "" {
		in.ExternalPassword = old.Registry.ExternalPassword
	}
	if in.RedisPassword == "" {
		in.RedisPassword = old.RedisPassword
	}
}

// retrySetup stores the new fields of a failed setup and queues it again; finished
// steps are kept, and the steps are idempotent, so it continues where it stopped.
func (h *Handlers) retrySetup(c *fiber.Ctx, st *store.RegistrySetup, j *store.Job, in *SetupInput) error {
	if !j.Done() || j.Status == store.JobSucceeded {
		return FieldErrors{"setup": "Only a failed setup can be retried; this one is " + string(j.Status) + "."}
	}
	p, sec := in.Params()
	params, err := json.Marshal(p)
	if err != nil {
		return err
	}
	secRaw, err := json.Marshal(sec)
	if err != nil {
		return err
	}
	if err := h.Store.SetJobSecret(ctx(c), j.ID, string(secRaw), params); err != nil {
		return err
	}
	if err := h.Store.ExtendSetup(ctx(c), st.Token); err != nil {
		return err
	}
	if err := h.Store.RetryJob(ctx(c), j.ID); err != nil {
		return err
	}
	h.Kube.Engine.Wake()
	return nil
}
