package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"runr.dev/console/crypt"
	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/ops/preflight"
	"runr.dev/console/ops/redis"
	"runr.dev/console/ops/registry"
	"runr.dev/console/perm"
	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/store/pglock"
)

// KindRegistrySetup is the kind of job that creates a region with its registry.
const KindRegistrySetup = "registry-setup"

// SetupParams are the non-secret fields of a region created with its registry
// (wizard step 2, POST /api/registry-setup/start).
type SetupParams struct {
	Name         string           `json:"name"`
	Nodes        []string         `json:"nodes"`
	Registry     registry.Params  `json:"registry"`
	Monitoring   store.Monitoring `json:"monitoring"`
	RedisMode    store.RedisMode  `json:"redis_mode"`
	RedisAddress string           `json:"redis_address,omitempty"`
	IsActive     bool             `json:"is_active"`
	DataLocation string           `json:"data_location,omitempty"`
	// RegionMode is the mode a platform administrator chose ("": managed).
	RegionMode store.RegionMode `json:"region_mode,omitempty"`
	// BillingType is the region's billing type (Billing module; "": pay as you go).
	BillingType string `json:"billing_type,omitempty"`
}

// SetupSecret holds the secret fields of a setup; it is stored encrypted with the job.
type SetupSecret struct {
	Kubeconfig    string           `json:"kubeconfig"`
	Registry      registry.Secrets `json:"registry"`
	RedisPassword string           `json:"redis_password,omitempty"`
}

// NewRegionRecord builds the record of a new region from its fields and the check.
func NewRegionRecord(p SetupParams, sec SetupSecret, chk *preflight.Result) (*store.Region, string) {
	agentToken := crypt.RandomToken("runr_agent_")
	status := store.RegionActive
	if !p.IsActive {
		status = store.RegionInactive
	}
	redisMode := p.RedisMode
	if redisMode == "" {
		redisMode = store.RedisManaged
	}
	r := &store.Region{
		Name: p.Name, Kubeconfig: string(chk.Kubeconfig), ClusterServer: chk.Server, ClusterKey: kube.ClusterKey(chk.Server),
		K8sVersion: chk.Version, Status: status, Nodes: p.Nodes, DataLocation: p.DataLocation,
		Monitoring:   store.JSON[store.Monitoring]{V: p.Monitoring},
		RegistryMode: kit.OrDefault(p.Registry.Mode, store.RegistryNone), RegistryConfig: store.JSON[store.RegistryConfig]{V: p.Registry.Config()},
		RegistrySecret: p.Registry.SecretValue(sec.Registry),
		RedisMode:      redisMode, RedisAddress: p.RedisAddress, RedisPassword: sec.RedisPassword,
		AgentToken: agentToken, AgentTokenHash: crypt.HashToken(agentToken), Mode: kit.OrDefault(p.RegionMode, store.RegionManaged),
	}
	r.Settings.V.RequestTimeout = DefaultRequestTimeout
	if redisMode.Given() {
		r.RedisStatus = store.ComponentReady
	}
	return r, agentToken
}

// DefaultRequestTimeout is a new region's request_timeout in seconds (Knative's default maximum).
const DefaultRequestTimeout = 300

func (s *Service) registerSetupKinds() {
	s.Engine.Register(&engine.Kind{
		Name: KindRegistrySetup,
		Plan: engine.PlanWith(s.setupSteps),
	})
}

// setupRun is what the steps of one run of a setup job share, each read once: the job's
// secret parameters, its cluster access and what the check of the cluster found (a
// resumed job reads them again, once).
type setupRun struct {
	s       *Service
	p       SetupParams
	sec     *SetupSecret
	cluster *kube.Cluster
	check   *preflight.Result
}

// access is the job's cluster access and secret parameters.
func (run *setupRun) access(jc *engine.JobContext) (*kube.Cluster, SetupSecret, error) {
	if run.sec == nil {
		sec, err := kit.DecodeSecret[SetupSecret](jc)
		if err != nil {
			return nil, sec, err
		}
		run.sec = &sec
	}
	if run.cluster == nil {
		c, err := run.s.ClusterFor([]byte(run.sec.Kubeconfig))
		if err != nil {
			return nil, *run.sec, err
		}
		run.cluster = c
	}
	return run.cluster, *run.sec, nil
}

// checked is the check of the job's cluster, through its access; a namespace of the
// region's name that this setup created passes.
func (run *setupRun) checked(ctx context.Context, jc *engine.JobContext) (*preflight.Result, error) {
	if run.check != nil {
		return run.check, nil
	}
	c, sec, err := run.access(jc)
	if err != nil {
		return nil, err
	}
	chk, err := run.s.Preflight.CheckWith(ctx, run.p.Name, []byte(sec.Kubeconfig), func(ns *corev1.Namespace) bool {
		return ns.Labels["runr.dev/setup"] == jc.Job.ID
	}, c)
	if err != nil {
		return nil, err
	}
	run.check = chk
	return chk, nil
}

// withAccess runs f with the job's cluster access and secret parameters.
func (run *setupRun) withAccess(f func(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, sec SetupSecret) error) func(context.Context, *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		c, sec, err := run.access(jc)
		if err != nil {
			return err
		}
		return f(ctx, jc, c, sec)
	}
}

// setupSteps are the steps of a region created with its registry.
func (s *Service) setupSteps(p SetupParams) []engine.Step {
	run := &setupRun{s: s, p: p}
	cluster := run.access
	return []engine.Step{
		{Name: "connect", Title: "Connect to the cluster", Run: s.setupConnect(run)},
		{Name: "storage", Title: "Test the storage", Run: run.withAccess(func(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, sec SetupSecret) error {
			return s.Registry.StorageTest(ctx, jc, c, p.Registry, sec.Registry)
		})},
		{Name: "zot", Title: "Install Zot", Run: run.withAccess(func(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, sec SetupSecret) error {
			return s.Registry.InstallZot(ctx, jc, c, p.Registry, sec.Registry)
		})},
		{Name: "mirror", Title: "Node mirror", Run: run.withAccess(func(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, _ SetupSecret) error {
			return s.Registry.InstallMirror(ctx, jc, c, p.Registry)
		})},
		{Name: "prepull", Title: "Pre-pull common images", Run: run.withAccess(func(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, _ SetupSecret) error {
			return s.Registry.Prepull(ctx, jc, c, p.Registry)
		})},
		{Name: "region", Title: "Create the region and its project namespace", Run: s.setupRegion(run)},
		{Name: "workers", Title: "Dedicated workers", Run: s.setupWorkers(p, cluster)},
		{Name: "redis", Title: "Queue the managed Redis", Run: s.setupRedis(p)},
	}
}

// setupConnect is the step "connect" (Connect to the cluster) of setupSteps.
func (s *Service) setupConnect(run *setupRun) func(ctx context.Context, jc *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		if taken, err := s.nameTaken(ctx, run.p.Name, jc.Job); err != nil {
			return err
		} else if taken {
			return fmt.Errorf("a region named %s exists already: choose another name", run.p.Name)
		}
		chk, err := run.checked(ctx, jc)
		if err != nil {
			return err
		}
		if !chk.OK {
			return errors.New(chk.FirstFailure())
		}
		if owner, err := s.Preflight.OtherOwnerOn(ctx, chk.Server, jc.Job.Tenant(), jc.Job.Region()); err != nil {
			return err
		} else if owner != nil {
			return errors.New(preflight.OtherOwnerRefusal)
		}
		jc.Note("Connected to %s (%s, %d nodes)", chk.Server, chk.Version, len(chk.Nodes))
		return nil
	}
}

// setupRegion is the step "region" (Create the region and its project namespace) of setupSteps.
func (s *Service) setupRegion(run *setupRun) func(ctx context.Context, jc *engine.JobContext) error {
	p := run.p
	return func(ctx context.Context, jc *engine.JobContext) error {
		c, sec, err := run.access(jc)
		if err != nil {
			return err
		}
		chk, err := run.checked(ctx, jc) // a job resumed after a restart checks here
		if err != nil {
			return err
		}
		r, err := s.Store.RegionByName(ctx, p.Name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			r, _ = NewRegionRecord(p, sec, chk)
			// A setup a tenant's user started creates the tenant's region.
			r.TenantID = jc.Job.TenantID
			if p.Registry.Mode != "" && p.Registry.Mode != store.RegistryNone {
				r.RegistryStatus, r.RegistryAddress = store.ComponentReady, p.Registry.Address()
			}
			if err := s.Observability.AdoptClusterAgentToken(ctx, r); err != nil {
				return err
			}
			if err := s.Store.CreateRegion(ctx, r); err != nil {
				return err
			}
			if err := s.Billing.SetNewRegionType(ctx, r, p.BillingType); err != nil {
				return err
			}
			if p.Registry.Mode != "" && p.Registry.Mode != store.RegistryNone {
				if err := s.Store.UpdateRegistry(ctx, r.ID, store.RegistryUpdate{Status: store.Ptr(store.ComponentReady), Address: store.Ptr(p.Registry.Address())}); err != nil {
					return err
				}
			}
		case err != nil:
			return err
		default:
			if jc.Job.Region() != r.ID {
				return fmt.Errorf("a region named %s exists already: choose another name", p.Name)
			}
		}
		if err := s.Store.SetJobRegion(ctx, jc.Job.ID, r.ID); err != nil {
			return err
		}
		rid := r.ID
		jc.Job.RegionID = &rid
		if st, err := s.Store.SetupByJob(ctx, jc.Job.ID); err == nil {
			if err := s.Store.SetSetupRegion(ctx, st.Token, r.ID); err != nil {
				return err
			}
		}
		if _, err := kit.EnsureNamespace(ctx, jc, c, p.Name, map[string]string{"runr.dev/region": p.Name, "runr.dev/setup": jc.Job.ID}); err != nil {
			return err
		}
		jc.Note("Region %s created; its projects run in namespace %s", p.Name, p.Name)
		return nil
	}
}

// setupWorkers is the step "workers" (Dedicated workers) of setupSteps.
func (s *Service) setupWorkers(p SetupParams, cluster func(jc *engine.JobContext) (*kube.Cluster, SetupSecret, error)) func(ctx context.Context, jc *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		if len(p.Nodes) == 0 {
			jc.Note("No dedicated workers: projects run on every schedulable node")
			return engine.ErrSkip
		}
		c, _, err := cluster(jc)
		if err != nil {
			return err
		}
		exist, err := nodes.ApplyWorkers(ctx, c, p.Nodes, nil)
		if err != nil {
			return err
		}
		jc.Note("Labelled and tainted %d node(s) %s=%s:NoSchedule: %v", len(exist), nodes.DedicatedKey, nodes.DedicatedValue, exist)
		return nil
	}
}

// setupRedis is the step "redis" (Queue the managed Redis) of setupSteps.
func (s *Service) setupRedis(p SetupParams) func(ctx context.Context, jc *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		if p.RedisMode != "" && p.RedisMode != store.RedisManaged {
			jc.Note("Redis mode %s: no managed Redis", p.RedisMode)
			return engine.ErrSkip
		}
		r, err := s.JobRegion(ctx, jc)
		if err != nil {
			return err
		}
		if j, err := s.Store.ActiveJob(ctx, r.ID, redis.KindRedisInstall); err == nil {
			jc.Note("The managed Redis is queued (job %s)", j.ID)
			return nil
		}
		j, err := s.Redis.EnqueueInstall(ctx, r, jc.Job.CreatedBy)
		if err != nil {
			return err
		}
		jc.Note("Queued the managed Redis (job %s)", j.ID)
		return nil
	}
}

// nameTaken reports whether another region or another pending setup has the name.
func (s *Service) nameTaken(ctx context.Context, name string, job *store.Job) (bool, error) {
	r, err := s.Store.RegionByName(ctx, name)
	if err == nil {
		return r.ID != job.Region(), nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	return s.Store.NameTakenBySetup(ctx, name, job.ID)
}

// KindRegionInit is the kind of job that prepares a region created directly.
const KindRegionInit = "region-init"

func (s *Service) registerRegionKinds() {
	s.Engine.Register(&engine.Kind{Name: KindRegionInit, Plan: engine.PlanWith(func(p nodes.WorkersParams) []engine.Step {
		return []engine.Step{
			s.RegionStep("namespace", "Create the project namespace", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
				if _, err := kit.EnsureNamespace(ctx, jc, c, r.Name, map[string]string{"runr.dev/region": r.Name}); err != nil {
					return err
				}
				jc.Note("Namespace %s is ready for the region's projects", r.Name)
				return nil
			}),
			s.Nodes.WorkersStep(p),
		}
	})})
}

// RegionFields are the fields of a new region that a setup and a direct creation share.
type RegionFields struct {
	Name          string          `json:"name"`
	Kubeconfig    string          `json:"kubeconfig"`
	Nodes         []string        `json:"nodes"`
	IsActive      *bool           `json:"is_active"`
	PrometheusURL string          `json:"prometheus_url"`
	LokiURL       string          `json:"loki_url"`
	LokiOrgID     string          `json:"loki_org_id"`
	RedisMode     store.RedisMode `json:"redis_mode"`
	RedisAddress  string          `json:"redis_address"`
	RedisPassword string          `json:"redis_password"`
	DataLocation  string          `json:"data_location"`
	// RegionMode is set by platform administrators only (Tenancy module); ignored from others.
	RegionMode *store.RegionMode `json:"region_mode"`
	// BillingType is payg or fixed (Billing module, billing.manage; "": pay as you go).
	BillingType string `json:"billing_type"`
	// ConfirmBelowFloor dedicates selected nodes that fail the preflight floor.
	ConfirmBelowFloor bool `json:"confirm_below_floor"`
}

// SetupInput is a region to set up with its registry: the body of POST
// /api/registry-setup/start (and of its retry), and the wizard's step 2.
type SetupInput struct {
	RegionFields
	registry.Input
}

// Params returns the job parameters and secrets of a setup.
func (in *SetupInput) Params() (SetupParams, SetupSecret) {
	reg, regSec := in.Input.Params()
	active := in.IsActive == nil || *in.IsActive
	redis := in.RedisMode
	if redis == "" {
		redis = store.RedisManaged
	}
	nodes := in.Nodes
	if nodes == nil {
		nodes = []string{}
	}
	var mode store.RegionMode
	if in.RegionMode != nil {
		mode = *in.RegionMode
	}
	return SetupParams{Name: in.Name, Nodes: nodes, Registry: reg,
			Monitoring: store.Monitoring{PrometheusURL: in.PrometheusURL, LokiURL: in.LokiURL, LokiOrgID: in.LokiOrgID},
			RedisMode:  redis, RedisAddress: in.RedisAddress, IsActive: active, DataLocation: in.DataLocation, RegionMode: mode,
			BillingType: in.BillingType},
		SetupSecret{Kubeconfig: in.Kubeconfig, Registry: regSec, RedisPassword: in.RedisPassword}
}

// KeepSecrets gives the secrets left empty the values of the setup's previous attempt
// (a form never shows a secret again).
func (in *SetupInput) KeepSecrets(old SetupSecret) {
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

// CheckInput is a cluster to check for a region: the body of POST
// /api/knative-regions/check, and the wizard's step 1.
type CheckInput struct {
	Name       string `json:"name"`
	Kubeconfig string `json:"kubeconfig"`
}

// CheckRegion checks a cluster for a region, creating nothing; the name is optional,
// and checked when given.
func (s *Service) CheckRegion(ctx context.Context, in CheckInput) (*preflight.Result, error) {
	errs := map[string]string{}
	if in.Name != "" {
		if m := kit.ValidateRegionName(in.Name); m != "" {
			errs["name"] = m
		}
	}
	return s.checkNew(ctx, in, errs)
}

// CheckNewRegion is step 1 of the wizard: the name must be valid and free, and the
// cluster is checked, creating nothing.
func (s *Service) CheckNewRegion(ctx context.Context, in CheckInput) (*preflight.Result, error) {
	errs := map[string]string{}
	if m := kit.ValidateRegionName(in.Name); m != "" {
		errs["name"] = m
	} else if region, setup, err := s.nameUse(ctx, in.Name, ""); err != nil {
		return nil, err
	} else if region || setup {
		errs["name"] = "A region with this name exists already."
	}
	return s.checkNew(ctx, in, errs)
}

// checkNew checks the cluster of a kubeconfig once the fields have no errors.
func (s *Service) checkNew(ctx context.Context, in CheckInput, errs map[string]string) (*preflight.Result, error) {
	owner, err := s.Preflight.OtherOwnerErrors(ctx, []byte(in.Kubeconfig), store.TenantOf(ctx), "")
	if err != nil {
		return nil, err
	}
	if err := problem.FromFields(mergeErrs(errs, owner)); err != nil {
		return nil, err
	}
	chk, err := s.Preflight.Check(ctx, in.Name, []byte(in.Kubeconfig), nil)
	if err != nil {
		return nil, fmt.Errorf("check the cluster of %s: %w", in.Name, err)
	}
	return chk, nil
}

// nameUse says whether a region has the name, and else whether a setup under way (other
// than exceptJob's) has it: region names are one namespace, every tenant's included.
func (s *Service) nameUse(ctx context.Context, name, exceptJob string) (region, setup bool, err error) {
	region, setup, err = s.Store.RegionNameInUse(ctx, name, exceptJob)
	if err != nil {
		return false, false, fmt.Errorf("region name %s: %w", name, err)
	}
	return region, setup && !region, nil
}

// actorFields applies to a new region what depends on who asks: the region mode (set by
// platform administrators only; ignored from anyone else) and existing monitoring (with
// the Tenancy module, platform users and tenant owners only). It returns field errors.
func (s *Service) actorFields(actor kit.Actor, in *SetupInput) map[string]string {
	errs := map[string]string{}
	in.RegionMode = s.Tenancy.RegionModeOf(actor, in.RegionMode, errs)
	s.Tenancy.MonitoringFieldErrors(actor, store.Monitoring{PrometheusURL: in.PrometheusURL, LokiURL: in.LokiURL}, errs)
	s.Billing.CheckNewRegionType(actor, in.BillingType, errs)
	return errs
}

// mergeErrs adds the field errors of more to errs (either may be nil).
func mergeErrs(errs, more map[string]string) map[string]string {
	if len(more) == 0 {
		return errs
	}
	if errs == nil {
		errs = map[string]string{}
	}
	for k, v := range more {
		if _, ok := errs[k]; !ok {
			errs[k] = v
		}
	}
	return errs
}

// validateSetup checks a setup's fields, its name and its cluster: it returns the field
// errors (nil when there are none) and the check (nil when the fields were wrong). The
// kubeconfig becomes the one the check read.
func (s *Service) validateSetup(ctx context.Context, in *SetupInput, exceptJob string) (*preflight.Result, map[string]string, error) {
	if errs := in.validate(); len(errs) > 0 {
		return nil, errs, nil
	}
	region, setup, err := s.nameUse(ctx, in.Name, exceptJob)
	switch {
	case err != nil:
		return nil, nil, err
	case region:
		return nil, map[string]string{"name": "A region with this name exists already."}, nil
	case setup:
		return nil, map[string]string{"name": "A setup of a region with this name is under way."}, nil
	}
	chk, err := s.Preflight.Check(ctx, in.Name, []byte(in.Kubeconfig), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("check the cluster of %s: %w", in.Name, err)
	}
	if !chk.OK {
		return chk, checkRefusal(chk), nil
	}
	if m := nodes.NodesExist(in.Nodes, chk.Nodes); m != "" {
		return chk, map[string]string{"nodes": m}, nil
	}
	if m := belowFloorField(in, chk.Nodes); m != "" {
		return chk, map[string]string{"confirm_below_floor": m}, nil
	}
	in.Kubeconfig = string(chk.Kubeconfig)
	return chk, nil, nil
}

// StartSetup checks a new region (its fields, its name and its cluster) and queues its
// setup with its registry (internal unless another mode is given).
func (s *Service) StartSetup(ctx context.Context, actor kit.Actor, in SetupInput) (*store.RegistrySetup, error) {
	if in.RegistryMode == "" {
		in.RegistryMode = store.RegistryInternal
	}
	mine := s.actorFields(actor, &in)
	_, errs, err := s.validateSetup(ctx, &in, "")
	if err != nil {
		return nil, err
	}
	if err := problem.FromFields(mergeErrs(errs, mine)); err != nil {
		return nil, err
	}
	return s.enqueueSetup(ctx, actor, in)
}

// StartCheckedSetup queues the setup of the wizard's step 2, whose cluster step 1
// checked: the workers selected must be among the nodes that check found.
func (s *Service) StartCheckedSetup(ctx context.Context, actor kit.Actor, in SetupInput, found []kit.NodeInfo) (*store.RegistrySetup, error) {
	errs := mergeErrs(in.validate(), s.actorFields(actor, &in))
	if m := nodes.NodesExist(in.Nodes, found); m != "" {
		errs["nodes"] = m
	} else if m := belowFloorField(&in, found); m != "" {
		errs["confirm_below_floor"] = m
	}
	if err := problem.FromFields(errs); err != nil {
		return nil, err
	}
	return s.enqueueSetup(ctx, actor, in)
}

// enqueueSetup queues a registry-setup job and records its setup. The name is checked
// again under a lock on it: a replayed or doubled request never starts two setups of one name.
func (s *Service) enqueueSetup(ctx context.Context, actor kit.Actor, in SetupInput) (*store.RegistrySetup, error) {
	owner, err := s.Preflight.OtherOwnerErrors(ctx, []byte(in.Kubeconfig), actor.TenantID, "")
	if err == nil {
		owner, err = s.sharedRegistryErrors(ctx, in, "", owner)
	}
	if err == nil {
		err = problem.FromFields(owner)
	}
	if err != nil {
		return nil, err
	}
	p, sec := in.Params()
	raw, err := json.Marshal(sec)
	if err != nil {
		return nil, fmt.Errorf("start the setup of %s: %w", in.Name, err)
	}
	var st *store.RegistrySetup
	// The name lock, across every console replica, makes the check that a name is free and
	// the start of its setup one, so a replayed form cannot start two setups of one name.
	err = pglock.With(ctx, s.Store.DB.DB, "region-name:"+in.Name, func() error {
		region, setup, err := s.nameUse(ctx, in.Name, "")
		if err != nil {
			return err
		}
		if region || setup {
			return &problem.Invalid{Fields: map[string]string{"name": "A region or a setup of this name exists already."}}
		}
		j, err := s.Enqueue(ctx, engine.Request{Kind: KindRegistrySetup, Title: "Create region " + in.Name + " with its registry",
			Params: p, Secret: string(raw), CreatedBy: actor.Email})
		if err != nil {
			return err
		}
		st, err = s.Store.CreateSetup(ctx, j.ID, actor.Email)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("start the setup of %s: %w", in.Name, err)
	}
	return st, nil
}

// sharedRegistryErrors adds to errs the refusal of an internal registry on a cluster
// whose internal registry is a region's other than exceptRegion.
func (s *Service) sharedRegistryErrors(ctx context.Context, in SetupInput, exceptRegion string, errs map[string]string) (map[string]string, error) {
	if in.RegistryMode != store.RegistryInternal {
		return errs, nil
	}
	kc, err := kube.ParseKubeconfig([]byte(in.Kubeconfig))
	if err != nil {
		return errs, nil // the kubeconfig's own error is reported on its field
	}
	owner, err := s.Registry.InternalOwner(ctx, kube.ClusterKey(kc.Server), exceptRegion)
	if err != nil || owner == "" {
		return errs, err
	}
	return mergeErrs(errs, map[string]string{"registry_mode": registry.SharedRefusal(owner)}), nil
}

// SetupOf loads a setup's job with its parameters and its secrets.
func (s *Service) SetupOf(ctx context.Context, st *store.RegistrySetup) (*store.Job, SetupParams, SetupSecret, error) {
	var p SetupParams
	var sec SetupSecret
	j, err := s.Store.JobByID(ctx, *st.JobID)
	if err != nil {
		return nil, p, sec, fmt.Errorf("setup %s: %w", st.ID, err)
	}
	if err := json.Unmarshal(j.Params, &p); err != nil {
		return nil, p, sec, fmt.Errorf("setup %s: %w", st.ID, err)
	}
	raw, err := s.Store.JobSecret(j)
	if err != nil {
		return nil, p, sec, fmt.Errorf("setup %s: %w", st.ID, err)
	}
	_ = json.Unmarshal([]byte(raw), &sec)
	return j, p, sec, nil
}

// RetrySetup changes the fields of a failed setup and queues it again under the same
// name; finished steps are kept, and the steps are idempotent, so it continues where
// it stopped.
func (s *Service) RetrySetup(ctx context.Context, actor kit.Actor, st *store.RegistrySetup, in SetupInput) (*store.Job, error) {
	j, err := s.Store.JobByID(ctx, *st.JobID)
	if err != nil {
		return nil, fmt.Errorf("retry setup %s: %w", st.ID, err)
	}
	if j.Status != store.JobFailed && j.Status != store.JobCancelled {
		return nil, &problem.Refused{Reason: "Only a setup in error can be retried; this one is " + string(j.Status) + "."}
	}
	if in.RegistryMode == "" {
		in.RegistryMode = store.RegistryInternal
	}
	var old SetupParams
	_ = json.Unmarshal(j.Params, &old)
	if in.Name != old.Name {
		return nil, &problem.Invalid{Fields: map[string]string{"name": "A retry keeps the region's name (" + old.Name + ")."}}
	}
	created := "" // the region the failed setup may have created already
	if st.RegionID != nil {
		created = *st.RegionID
	}
	errs, err := s.sharedRegistryErrors(ctx, in, created, mergeErrs(in.validate(), s.actorFields(actor, &in)))
	if err != nil {
		return nil, err
	}
	if err := problem.FromFields(errs); err != nil {
		return nil, err
	}
	p, sec := in.Params()
	params, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("retry setup %s: %w", st.ID, err)
	}
	secRaw, err := json.Marshal(sec)
	if err != nil {
		return nil, fmt.Errorf("retry setup %s: %w", st.ID, err)
	}
	if err := s.requeueSetup(ctx, st, j, params, string(secRaw)); err != nil {
		return nil, fmt.Errorf("retry setup %s: %w", st.ID, err)
	}
	s.Log.Info("setup retried", "region", in.Name, "user", actor.Email)
	return j, nil
}

// requeueSetup stores a setup's new fields, extends its token and queues its job again.
func (s *Service) requeueSetup(ctx context.Context, st *store.RegistrySetup, j *store.Job, params []byte, secret string) error {
	if err := s.Store.SetJobSecret(ctx, j.ID, secret, params); err != nil {
		return err
	}
	if err := s.Store.ExtendSetup(ctx, st.Token); err != nil {
		return err
	}
	if err := s.Store.RetryJob(ctx, j.ID); err != nil {
		return err
	}
	s.Engine.Wake()
	return nil
}

// RegionInput is the body of POST /api/knative-regions: the region at once, and its
// registry in the background when registry fields are given.
type RegionInput struct {
	RegionFields
	RegistryMode          store.RegistryMode `json:"registry_mode"`
	RegistryStorageType   string             `json:"registry_storage_type"`
	RegistryStorageConfig RegistryStorage    `json:"registry_storage_config"`
	RegistryAddress       string             `json:"registry_address"`
	RegistryUsername      string             `json:"registry_username"`
	RegistryPassword      string             `json:"registry_password"`
	RequestTimeout        *int               `json:"request_timeout"`
	Monitoring            *store.Monitoring  `json:"monitoring"`
}

// RegistryStorage is the storage of a registry created with its region: a PVC's or S3's fields.
type RegistryStorage struct {
	registry.PVCConfig
	registry.S3Config
}

// setup is the region's part of the input, as a setup without a registry.
func (in RegionInput) setup() SetupInput {
	f := in.RegionFields
	f.Name = strings.TrimSpace(f.Name)
	if m := in.Monitoring; m != nil {
		f.PrometheusURL, f.LokiURL, f.LokiOrgID = m.PrometheusURL, m.LokiURL, m.LokiOrgID
	}
	return SetupInput{RegionFields: f, Input: registry.Input{RegistryMode: store.RegistryNone}}
}

// registry is the registry's part of the input.
func (in RegionInput) registry() registry.Input {
	st := in.RegistryStorageConfig
	return registry.Input{RegistryMode: in.RegistryMode, StorageType: in.RegistryStorageType, PVCConfig: st.PVCConfig, S3Config: st.S3Config,
		ExternalAddress: in.RegistryAddress, ExternalUsername: in.RegistryUsername, ExternalPassword: in.RegistryPassword}
}

// CreateRegion records a region at once from its fields and its cluster's check, and
// queues the preparation of its cluster, its registry when registry fields are given
// (with the permission registry.manage) and its managed Redis. It returns the region
// with those jobs' ids by name (init, registry, redis).
func (s *Service) CreateRegion(ctx context.Context, actor kit.Actor, in RegionInput) (*store.Region, map[string]string, error) {
	setup, reg := in.setup(), in.registry()
	chk, err := s.validateNewRegion(ctx, actor, &setup, reg)
	if err != nil {
		return nil, nil, err
	}
	p, sec := setup.Params()
	r, _ := NewRegionRecord(p, sec, chk)
	if t := in.RequestTimeout; t != nil {
		if m := validateRequestTimeout(*t); m != "" {
			return nil, nil, &problem.Invalid{Fields: map[string]string{"request_timeout": m}}
		}
		r.Settings.V.RequestTimeout = *t
	}
	if err := s.Observability.AdoptClusterAgentToken(ctx, r); err != nil {
		return nil, nil, fmt.Errorf("create region %s: %w", r.Name, err)
	}
	if err := s.Store.CreateRegion(ctx, r); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, nil, &problem.Invalid{Fields: map[string]string{"name": "A region with this name exists already."}}
		}
		return nil, nil, fmt.Errorf("create region %s: %w", r.Name, err)
	}
	if err := s.Billing.SetNewRegionType(ctx, r, p.BillingType); err != nil {
		return nil, nil, fmt.Errorf("create region %s: %w", r.Name, err)
	}
	jobs, err := s.prepareRegion(ctx, actor, r, p, reg)
	return r, jobs, err
}

// validateNewRegion checks the region of CreateRegion with its cluster, and its registry
// when one is given.
func (s *Service) validateNewRegion(ctx context.Context, actor kit.Actor, setup *SetupInput, reg registry.Input) (*preflight.Result, error) {
	mine := s.actorFields(actor, setup)
	chk, errs, err := s.validateSetup(ctx, setup, "")
	if err != nil {
		return nil, err
	}
	errs = mergeErrs(errs, mine)
	if chk != nil && chk.OK {
		owner, err := s.Preflight.OtherOwnerOn(ctx, chk.Server, actor.TenantID, "")
		if err != nil {
			return nil, err
		}
		errs = mergeErrs(errs, owner)
	}
	if reg.RegistryMode != "" && reg.RegistryMode != store.RegistryNone {
		if errs == nil {
			errs = map[string]string{}
		}
		p, sec := reg.Params()
		registry.Validate(p, sec, errs)
		if !actor.Can(perm.RegistryManage) {
			errs["registry_mode"] = "Setting up a registry needs the permission registry.manage."
		}
	}
	return chk, problem.FromFields(errs)
}

// prepareRegion queues the jobs of a region just created: its cluster's preparation, its
// registry (when one is given) and its managed Redis.
func (s *Service) prepareRegion(ctx context.Context, actor kit.Actor, r *store.Region, p SetupParams, reg registry.Input) (map[string]string, error) {
	jobs := map[string]string{}
	j, err := s.Enqueue(ctx, engine.Request{Kind: KindRegionInit, Title: "Prepare the cluster of " + r.Name,
		Subject: r.ID, Params: nodes.WorkersParams{Nodes: p.Nodes}, CreatedBy: actor.Email})
	if err != nil {
		return jobs, err
	}
	jobs["init"] = j.ID
	if reg.RegistryMode != "" && reg.RegistryMode != store.RegistryNone {
		rp, sec := reg.Params()
		j, err := s.Registry.Install(ctx, actor, r, rp, sec)
		if err != nil {
			return jobs, err
		}
		jobs["registry"] = j.ID
	}
	if p.RedisMode == store.RedisManaged {
		j, err := s.Redis.EnqueueInstall(ctx, r, actor.Email)
		if err != nil {
			return jobs, err
		}
		jobs["redis"] = j.ID
	}
	return jobs, nil
}

// DeleteRegion removes RunR's record of a region; nothing is removed from the cluster, and
// its projects stay in RunR without a region (the spec's API and CLI removal; the
// console's removal page is offered only once no project is left).
func (s *Service) DeleteRegion(ctx context.Context, actor kit.Actor, r *store.Region) error {
	if err := s.Store.DeleteRegion(ctx, r.ID); err != nil {
		return fmt.Errorf("delete region %s: %w", r.Name, err)
	}
	s.Log.Info("region removed", "region", r.Name, "user", actor.Email, "projects_kept_without_a_region", r.ProjectCount)
	if err := s.Isolation.HandOver(ctx, r); err != nil {
		// The record is gone either way; the sharing region can still forget its share.
		s.Log.Warn("sandbox runtimes not handed over", "region", r.Name, "err", err)
	}
	return nil
}

// belowFloorField is the refusal of a setup that dedicates nodes below the preflight floor
// without the confirmation ("" when none is needed).
func belowFloorField(in *SetupInput, found []kit.NodeInfo) string {
	if why := nodes.SelectedBelowFloor(in.Nodes, found); why != "" && !in.ConfirmBelowFloor {
		return why + ". Confirm to dedicate it anyway."
	}
	return ""
}
