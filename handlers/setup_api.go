package handlers

import (
	"encoding/json"
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops"
	"runr.dev/console/store"
)

// CheckInput is the body of POST /api/knative-regions/check.
type CheckInput struct {
	Name       string `json:"name"`
	Kubeconfig string `json:"kubeconfig"`
}

// APICheckRegion is POST /api/knative-regions/check: step 1's checklist, creating nothing.
func (h *Handlers) APICheckRegion(c *fiber.Ctx) error {
	var in CheckInput
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	errs := FieldErrors{}
	if in.Name != "" {
		if m := ValidateRegionName(in.Name); m != "" {
			errs["name"] = m
		}
	}
	if _, err := kube.ParseKubeconfig([]byte(in.Kubeconfig)); err != nil {
		errs["kubeconfig"] = err.Error()
	}
	if len(errs) > 0 {
		return Invalid(c, errs)
	}
	chk, err := h.Kube.CheckCluster(ctx(c), in.Name, []byte(in.Kubeconfig), nil)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(fiber.Map{"data": chk})
}

// validateSetup validates a setup body and checks the cluster: a refusal is a 422.
func (h *Handlers) validateSetup(c *fiber.Ctx, in *SetupInput, exceptJob string) (*ops.CheckResult, FieldErrors, error) {
	if errs := in.Validate(); errs != nil {
		return nil, errs, nil
	}
	if r, err := h.Store.RegionByName(ctx(c), in.Name); err == nil && r.ID != "" {
		return nil, FieldErrors{"name": "A region with this name exists already."}, nil
	} else if err != nil && !isNotFoundErr(err) {
		return nil, nil, err
	}
	if taken, err := h.Store.NameTakenBySetup(ctx(c), in.Name, exceptJob); err != nil {
		return nil, nil, err
	} else if taken {
		return nil, FieldErrors{"name": "A setup of a region with this name is under way."}, nil
	}
	chk, err := h.Kube.CheckCluster(ctx(c), in.Name, []byte(in.Kubeconfig), nil)
	if err != nil {
		return nil, nil, err
	}
	if !chk.OK {
		return chk, checkRefusal(chk), nil
	}
	if m := nodesExist(in.Nodes, chk); m != "" {
		return chk, FieldErrors{"nodes": m}, nil
	}
	in.Kubeconfig = string(chk.Kubeconfig)
	return chk, nil, nil
}

// APISetupStart is POST /api/registry-setup/start: 202 with the setup token; the
// region and its registry are set up in the background.
func (h *Handlers) APISetupStart(c *fiber.Ctx) error {
	var in SetupInput
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	if in.RegistryMode == "" {
		in.RegistryMode = store.RegistryInternal
	}
	_, errs, err := h.validateSetup(c, &in, "")
	if err != nil {
		return h.Fail(c, err)
	}
	if errs != nil {
		return Invalid(c, errs)
	}
	st, err := h.startSetup(c, &in)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"setup_token": st.Token, "setup_id": st.ID, "job_id": *st.JobID})
}

// SetupStatus is the status of a setup, from its job.
type SetupStatus struct {
	Status   string  `json:"status"` // pending | installing | ready | error
	Phase    string  `json:"phase"`
	RegionID *string `json:"region_id"`
	SetupID  string  `json:"setup_id"`
	JobID    string  `json:"job_id"`
	Error    string  `json:"error,omitempty"`
	Progress int     `json:"progress"`
	Wait     string  `json:"wait,omitempty"`
}

// APISetupStatus is GET /api/registry-setup/{token}/status.
func (h *Handlers) APISetupStatus(c *fiber.Ctx) error {
	st, err := h.Store.SetupByToken(ctx(c), c.Params("token"))
	if err != nil {
		return h.Fail(c, err)
	}
	d, err := h.JobData(ctx(c), Who(c), *st.JobID)
	if err != nil {
		return h.Fail(c, err)
	}
	out := SetupStatus{SetupID: st.ID, JobID: d.Job.ID, RegionID: st.RegionID, Progress: d.Progress(), Wait: d.CurrentWait()}
	switch d.Job.Status {
	case store.JobQueued:
		out.Status, out.Phase = "pending", "queued"
	case store.JobRunning:
		out.Status = "installing"
	case store.JobSucceeded:
		out.Status, out.Phase = "ready", "done"
	default:
		out.Status, out.Error = "error", d.Job.Error
	}
	if out.Phase == "" {
		for _, s := range d.Steps {
			if s.Status == store.StepRunning || s.Status == store.StepFailed || s.Status == store.StepPending {
				out.Phase = s.Name
				break
			}
		}
	}
	if out.RegionID == nil && d.Job.RegionID != nil {
		out.RegionID = d.Job.RegionID
	}
	return c.JSON(out)
}

// APISetupRetry is POST /api/registry-setup/{token}/retry with the same body as start.
func (h *Handlers) APISetupRetry(c *fiber.Ctx) error {
	st, err := h.Store.SetupByToken(ctx(c), c.Params("token"))
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Store.JobByID(ctx(c), *st.JobID)
	if err != nil {
		return h.Fail(c, err)
	}
	if j.Status != store.JobFailed && j.Status != store.JobCancelled {
		return Unprocessable(c, "Only a setup in error can be retried; this one is "+string(j.Status)+".")
	}
	var in SetupInput
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	if in.RegistryMode == "" {
		in.RegistryMode = store.RegistryInternal
	}
	var p ops.SetupParams
	_ = json.Unmarshal(j.Params, &p)
	if in.Name != p.Name {
		return Invalid(c, FieldErrors{"name": "A retry keeps the region's name (" + p.Name + ")."})
	}
	if errs := in.Validate(); errs != nil {
		return Invalid(c, errs)
	}
	if err := h.retrySetup(c, st, j, &in); err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"setup_token": st.Token, "setup_id": st.ID, "job_id": j.ID})
}

// RegionInput is the body of POST /api/knative-regions: the region at once, and its
// registry in the background when registry fields are given.
type RegionInput struct {
	Name                  string             `json:"name"`
	Kubeconfig            string             `json:"kubeconfig"`
	Nodes                 []string           `json:"nodes"`
	IsActive              *bool              `json:"is_active"`
	RedisMode             store.RedisMode    `json:"redis_mode"`
	RedisAddress          string             `json:"redis_address"`
	RedisPassword         string             `json:"redis_password"`
	PrometheusURL         string             `json:"prometheus_url"`
	LokiURL               string             `json:"loki_url"`
	LokiOrgID             string             `json:"loki_org_id"`
	RegistryMode          store.RegistryMode `json:"registry_mode"`
	RegistryStorageType   string             `json:"registry_storage_type"`
	RegistryStorageConfig registryStorage    `json:"registry_storage_config"`
	RegistryAddress       string             `json:"registry_address"`
	RegistryUsername      string             `json:"registry_username"`
	RegistryPassword      string             `json:"registry_password"`
	DataLocation          string             `json:"data_location"`
	RequestTimeout        *int               `json:"request_timeout"`
	Monitoring            *store.Monitoring  `json:"monitoring"`
}

type registryStorage struct {
	StorageClass string `json:"storageClass"`
	Size         string `json:"size"`
	Endpoint     string `json:"endpoint"`
	Bucket       string `json:"bucket"`
	Region       string `json:"region"`
	AccessKey    string `json:"access_key"`
	SecretKey    string `json:"secret_key"`
}

func (in RegionInput) setup() SetupInput {
	s := SetupInput{Name: strings.TrimSpace(in.Name), Kubeconfig: in.Kubeconfig, Nodes: in.Nodes, RegistryMode: store.RegistryNone,
		PrometheusURL: in.PrometheusURL, LokiURL: in.LokiURL, LokiOrgID: in.LokiOrgID, RedisMode: in.RedisMode,
		RedisAddress: in.RedisAddress, RedisPassword: in.RedisPassword, IsActive: in.IsActive, DataLocation: in.DataLocation}
	return s
}

func (in RegionInput) registry() (ops.RegistryParams, ops.RegistrySecrets) {
	st := in.RegistryStorageConfig
	s := SetupInput{RegistryMode: in.RegistryMode, StorageType: in.RegistryStorageType, ExternalAddress: in.RegistryAddress,
		ExternalUsername: in.RegistryUsername, ExternalPassword: in.RegistryPassword}
	s.PVCConfig.StorageClass, s.PVCConfig.Size = st.StorageClass, st.Size
	s.S3Config.Endpoint, s.S3Config.Bucket, s.S3Config.Region = st.Endpoint, st.Bucket, st.Region
	s.S3Config.AccessKey, s.S3Config.SecretKey = st.AccessKey, st.SecretKey
	return s.Registry()
}

// APICreateRegion is POST /api/knative-regions.
func (h *Handlers) APICreateRegion(c *fiber.Ctx) error {
	var in RegionInput
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	if in.Monitoring != nil {
		in.PrometheusURL, in.LokiURL, in.LokiOrgID = in.Monitoring.PrometheusURL, in.Monitoring.LokiURL, in.Monitoring.LokiOrgID
	}
	s := in.setup()
	chk, errs, err := h.validateSetup(c, &s, "")
	if err != nil {
		return h.Fail(c, err)
	}
	reg, regSec := in.registry()
	withRegistry := reg.Mode != "" && reg.Mode != store.RegistryNone
	if withRegistry {
		if errs == nil {
			errs = FieldErrors{}
		}
		ValidateRegistry(reg, regSec, errs)
		if !Who(c).Can(store.PermRegistryManage) {
			errs["registry_mode"] = "Setting up a registry needs the permission registry.manage."
		}
		if len(errs) == 0 {
			errs = nil
		}
	}
	if errs != nil {
		return Invalid(c, errs)
	}
	p, sec := s.Params()
	r, _ := ops.NewRegionRecord(p, sec, chk)
	if in.RequestTimeout != nil {
		if *in.RequestTimeout < 1 || *in.RequestTimeout > 3600 {
			return Invalid(c, FieldErrors{"request_timeout": "Use 1 to 3600 seconds."})
		}
		r.Settings.V.RequestTimeout = *in.RequestTimeout
	}
	if err := h.Kube.AdoptClusterAgentToken(ctx(c), r); err != nil {
		return h.Fail(c, err)
	}
	if err := h.Store.CreateRegion(ctx(c), r); err != nil {
		if errorsIsConflict(err) {
			return Invalid(c, FieldErrors{"name": "A region with this name exists already."})
		}
		return h.Fail(c, err)
	}
	jobs := fiber.Map{}
	j, err := h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindRegionInit, Title: "Prepare the cluster of " + r.Name,
		Subject: r.ID, Params: ops.WorkersParams{Nodes: p.Nodes}, CreatedBy: Who(c).User.Email})
	if err != nil {
		return h.Fail(c, err)
	}
	jobs["init"] = j.ID
	if withRegistry {
		j, err := h.enqueueRegistry(c, r, reg, regSec)
		if err != nil {
			return h.Fail(c, err)
		}
		jobs["registry"] = j.ID
	}
	if p.RedisMode == store.RedisManaged {
		j, err := h.Kube.EnqueueRedisInstall(ctx(c), r, Who(c).User.Email)
		if err != nil {
			return h.Fail(c, err)
		}
		jobs["redis"] = j.ID
	}
	r, err = h.Store.RegionByID(ctx(c), r.ID)
	if err != nil {
		return h.Fail(c, err)
	}
	base, _ := h.Store.BaseDomain(ctx(c))
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"data": ToRegionJSON(r, base), "jobs": jobs})
}

func (h *Handlers) enqueueRegistry(c *fiber.Ctx, r *store.Region, p ops.RegistryParams, sec ops.RegistrySecrets) (*store.Job, error) {
	raw, err := json.Marshal(sec)
	if err != nil {
		return nil, err
	}
	if err := h.Store.UpdateRegistry(ctx(c), r.ID, store.RegistryUpdate{Status: store.Ptr(store.ComponentInstalling), Message: store.Ptr("")}); err != nil {
		return nil, err
	}
	return h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindRegistryInstall, Title: "Set up the registry of " + r.Name,
		Subject: r.ID, Params: p, Secret: string(raw), CreatedBy: Who(c).User.Email})
}

// RegistryInput is the body of POST /api/knative-regions/{id}/registry.
type RegistryInput struct {
	RegistryMode store.RegistryMode `json:"registry_mode"`
	StorageType  string             `json:"storage_type"`
	PVCConfig    struct {
		StorageClass string `json:"storageClass"`
		Size         string `json:"size"`
	} `json:"pvc_config"`
	S3Config struct {
		Endpoint  string `json:"endpoint"`
		Bucket    string `json:"bucket"`
		Region    string `json:"region"`
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
	} `json:"s3_config"`
	ExternalAddress  string `json:"external_address"`
	ExternalUsername string `json:"external_username"`
	ExternalPassword string `json:"external_password"`
}

func (in RegistryInput) params() (ops.RegistryParams, ops.RegistrySecrets) {
	s := SetupInput{RegistryMode: in.RegistryMode, StorageType: in.StorageType, ExternalAddress: in.ExternalAddress,
		ExternalUsername: in.ExternalUsername, ExternalPassword: in.ExternalPassword}
	s.PVCConfig = in.PVCConfig
	s.S3Config = in.S3Config
	return s.Registry()
}

// APISetRegistry is POST /api/knative-regions/{id}/registry: set up (or replace) the registry.
func (h *Handlers) APISetRegistry(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	var in RegistryInput
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	p, sec := in.params()
	errs := FieldErrors{}
	ValidateRegistry(p, sec, errs)
	if p.Mode == store.RegistryNone || p.Mode == "" {
		errs["registry_mode"] = "Choose internal or external; DELETE removes the registry."
	}
	if len(errs) > 0 {
		return Invalid(c, errs)
	}
	if r.RegistryMode == store.RegistryInternal && r.RegistryStatus != store.ComponentNotInstalled {
		return Unprocessable(c, "The region has an internal registry: its volume holds the region's images. Remove it first (DELETE /api/knative-regions/"+r.ID+"/registry).")
	}
	if _, err := h.Store.ActiveJob(ctx(c), r.ID, ops.KindRegistryInstall); err == nil {
		return Unprocessable(c, "A registry setup of this region is running already.")
	}
	j, err := h.enqueueRegistry(c, r, p, sec)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": j.ID})
}

// APIDeleteRegistry is DELETE /api/knative-regions/{id}/registry.
func (h *Handlers) APIDeleteRegistry(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	if r.RegistryMode == store.RegistryNone {
		return Unprocessable(c, "The region has no registry.")
	}
	j, err := h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindRegistryRemove, Title: "Remove the registry of " + r.Name,
		Subject: r.ID, CreatedBy: Who(c).User.Email})
	if err != nil {
		return h.Fail(c, err)
	}
	if err := h.Store.UpdateRegistry(ctx(c), r.ID, store.RegistryUpdate{Status: store.Ptr(store.ComponentRemoving)}); err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": j.ID})
}

// APITestRegistry is POST /api/knative-regions/{id}/test-registry: the storage test or
// the external registry test, from the cluster, without installing anything.
func (h *Handlers) APITestRegistry(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	var in RegistryInput
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	p, sec := in.params()
	errs := FieldErrors{}
	ValidateRegistry(p, sec, errs)
	if len(errs) > 0 {
		return Invalid(c, errs)
	}
	raw, _ := json.Marshal(sec)
	j, err := h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindRegistryTest, Title: "Test the registry storage of " + r.Name,
		Subject: r.ID, Params: p, Secret: string(raw), CreatedBy: Who(c).User.Email})
	if err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": j.ID})
}

// APIKubeconfig is GET /api/knative-regions/{id}/kubeconfig: the only way the stored
// kubeconfig leaves the console (its own permission).
func (h *Handlers) APIKubeconfig(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	h.Log.Info("kubeconfig downloaded", "region", r.Name, "user", Who(c).User.Email)
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+r.Name+`.kubeconfig.yaml"`)
	c.Type("yaml")
	return c.SendString(r.Kubeconfig)
}

// rollingRestartRefusal says why a region's containerd cannot be restarted for its node
// mirror ("" when it can).
func rollingRestartRefusal(r *store.Region) string {
	if r.RegistryMode != store.RegistryInternal || r.RegistryStatus != store.ComponentReady {
		return "Only a region with a ready internal registry has a node mirror whose config_path containerd must read."
	}
	return ""
}

// APIRollingRestart is POST /api/knative-regions/{id}/registry/rolling-restart: containerd
// restarts node by node (the spec's registry:rolling-restart).
func (h *Handlers) APIRollingRestart(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	if msg := rollingRestartRefusal(r); msg != "" {
		return Unprocessable(c, msg)
	}
	j, err := h.Kube.StartRollingRestart(ctx(c), r, Who(c).User.Email)
	if err != nil {
		return JSONError(c, fiber.StatusBadGateway, "The cluster's nodes could not be listed: "+err.Error())
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": j.ID})
}

// RollingRestartForm is the Registry tab's Restart containerd.
func (h *Handlers) RollingRestartForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	if msg := rollingRestartRefusal(r); msg != "" {
		return h.formInvalid(c, r, "registry", nil, nil, msg)
	}
	if _, err := h.Kube.StartRollingRestart(ctx(c), r, Who(c).User.Email); err != nil {
		return h.formInvalid(c, r, "registry", nil, nil, "The cluster's nodes could not be listed: "+err.Error())
	}
	return h.formDone(c, r, "registry", "")
}
