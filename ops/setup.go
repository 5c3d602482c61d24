package ops

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/store"
)

// Job kinds of the registry and the region setup.
const (
	KindRegistrySetup   = "registry-setup"
	KindRegistryInstall = "registry-install"
	KindRegistryRemove  = "registry-remove"
)

// SetupParams are the non-secret fields of a region created with its registry
// (wizard step 2, POST /api/registry-setup/start).
type SetupParams struct {
	Name         string           `json:"name"`
	Nodes        []string         `json:"nodes"`
	Registry     RegistryParams   `json:"registry"`
	Monitoring   store.Monitoring `json:"monitoring"`
	RedisMode    store.RedisMode  `json:"redis_mode"`
	RedisAddress string           `json:"redis_address,omitempty"`
	IsActive     bool             `json:"is_active"`
	DataLocation string           `json:"data_location,omitempty"`
}

// SetupSecret holds the secret fields of a setup; it is stored encrypted with the job.
type SetupSecret struct {
	Kubeconfig    string          `json:"kubeconfig"`
	Registry      RegistrySecrets `json:"registry"`
	RedisPassword string          `json:"redis_password,omitempty"`
}

// NewRegionRecord builds the record of a new region from its fields and the check.
func NewRegionRecord(p SetupParams, sec SetupSecret, chk *CheckResult) (*store.Region, string) {
	agentToken := store.RandomToken("runr_agent_")
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
		RegistryMode: orDefault(p.Registry.Mode, store.RegistryNone), RegistryConfig: store.JSON[store.RegistryConfig]{V: p.Registry.Config()},
		RegistrySecret: p.Registry.SecretValue(sec.Registry),
		RedisMode:      redisMode, RedisAddress: p.RedisAddress, RedisPassword: sec.RedisPassword,
		AgentToken: agentToken, AgentTokenHash: store.HashToken(agentToken),
	}
	r.Settings.V.RequestTimeout = DefaultRequestTimeout
	if redisMode == store.RedisExternal {
		r.RedisStatus = store.ComponentReady
	}
	return r, agentToken
}

func orDefault[T ~string](s, def T) T {
	if s == "" {
		return def
	}
	return s
}

// DefaultRequestTimeout is a new region's request_timeout in seconds (Knative's default maximum).
const DefaultRequestTimeout = 300

func (s *Service) registerSetupKinds() {
	s.Engine.Register(&engine.Kind{
		Name: KindRegistrySetup,
		Plan: engine.PlanWith(s.setupSteps),
	})
	s.Engine.Register(&engine.Kind{
		Name: KindRegistryInstall,
		Plan: engine.PlanWith(s.registryInstallSteps),
		Finished: func(ctx context.Context, jc *engine.JobContext, err error) {
			if err != nil {
				s.record(s.Store.UpdateRegistry(ctx, jc.Job.Region(), store.RegistryUpdate{Status: store.Ptr(store.ComponentError), Message: store.Ptr(err.Error())}))
			}
		},
	})
	s.Engine.Register(&engine.Kind{
		Name: KindRegistryRemove,
		Plan: func(jc *engine.JobContext) ([]engine.Step, error) {
			return []engine.Step{{Name: "remove", Title: "Remove the registry", Run: func(ctx context.Context, jc *engine.JobContext) error {
				r, c, err := s.regionAndCluster(ctx, jc)
				if err != nil {
					return err
				}
				if err := s.removeRegistry(ctx, jc, c, r); err != nil {
					return err
				}
				return s.Store.UpdateRegistry(ctx, r.ID, store.RegistryUpdate{Mode: store.Ptr(store.RegistryNone), Status: store.Ptr(store.ComponentNotInstalled),
					Message: store.Ptr(""), Config: &store.RegistryConfig{}, Secret: store.Ptr(""), Address: store.Ptr("")})
			}}}, nil
		},
		Finished: func(ctx context.Context, jc *engine.JobContext, err error) {
			if err != nil {
				s.record(s.Store.UpdateRegistry(ctx, jc.Job.Region(), store.RegistryUpdate{Status: store.Ptr(store.ComponentError), Message: store.Ptr("removal failed: " + err.Error())}))
			}
		},
	})
}

// setupSteps are the steps of a region created with its registry.
func (s *Service) setupSteps(p SetupParams) []engine.Step {
	var cl *kube.Cluster
	cluster := func(jc *engine.JobContext) (*kube.Cluster, SetupSecret, error) {
		sec, err := decodeSecret[SetupSecret](jc)
		if err != nil {
			return nil, sec, err
		}
		if cl == nil {
			if cl, err = s.ClusterFor([]byte(sec.Kubeconfig)); err != nil {
				return nil, sec, err
			}
		}
		return cl, sec, nil
	}
	var chk *CheckResult
	return []engine.Step{
		{Name: "connect", Title: "Connect to the cluster", Run: s.setupConnect(p, chk)},
		{Name: "storage", Title: "Test the storage", Run: s.setupStorage(p, cluster)},
		{Name: "zot", Title: "Install Zot", Run: s.setupZot(p, cluster)},
		{Name: "mirror", Title: "Node mirror", Run: s.setupMirror(p, cluster)},
		{Name: "prepull", Title: "Pre-pull common images", Run: s.setupPrepull(p, cluster)},
		{Name: "region", Title: "Create the region and its project namespace", Run: s.setupRegion(p, cluster, chk)},
		{Name: "workers", Title: "Dedicated workers", Run: s.setupWorkers(p, cluster)},
		{Name: "redis", Title: "Queue the managed Redis", Run: s.setupRedis(p)},
	}
}

// setupConnect is the step "connect" (Connect to the cluster) of setupSteps.
func (s *Service) setupConnect(p SetupParams, chk *CheckResult) func(ctx context.Context, jc *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		sec, err := decodeSecret[SetupSecret](jc)
		if err != nil {
			return err
		}
		if taken, err := s.nameTaken(ctx, p.Name, jc.Job); err != nil {
			return err
		} else if taken {
			return fmt.Errorf("a region named %s exists already: choose another name", p.Name)
		}
		chk, err = s.CheckCluster(ctx, p.Name, []byte(sec.Kubeconfig), func(ns *corev1.Namespace) bool {
			return ns.Labels["runr.dev/setup"] == jc.Job.ID
		})
		if err != nil {
			return err
		}
		if !chk.OK {
			return errors.New(chk.FirstFailure())
		}
		jc.Note("Connected to %s (%s, %d nodes)", chk.Server, chk.Version, len(chk.Nodes))
		return nil
	}
}

// setupStorage is the step "storage" (Test the storage) of setupSteps.
func (s *Service) setupStorage(p SetupParams, cluster func(jc *engine.JobContext) (*kube.Cluster, SetupSecret, error)) func(ctx context.Context, jc *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		c, sec, err := cluster(jc)
		if err != nil {
			return err
		}
		return s.storageTest(ctx, jc, c, p.Registry, sec.Registry)
	}
}

// setupZot is the step "zot" (Install Zot) of setupSteps.
func (s *Service) setupZot(p SetupParams, cluster func(jc *engine.JobContext) (*kube.Cluster, SetupSecret, error)) func(ctx context.Context, jc *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		c, sec, err := cluster(jc)
		if err != nil {
			return err
		}
		return s.installZot(ctx, jc, c, p.Registry, sec.Registry)
	}
}

// setupMirror is the step "mirror" (Node mirror) of setupSteps.
func (s *Service) setupMirror(p SetupParams, cluster func(jc *engine.JobContext) (*kube.Cluster, SetupSecret, error)) func(ctx context.Context, jc *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		c, _, err := cluster(jc)
		if err != nil {
			return err
		}
		return s.installMirror(ctx, jc, c, p.Registry)
	}
}

// setupPrepull is the step "prepull" (Pre-pull common images) of setupSteps.
func (s *Service) setupPrepull(p SetupParams, cluster func(jc *engine.JobContext) (*kube.Cluster, SetupSecret, error)) func(ctx context.Context, jc *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		c, _, err := cluster(jc)
		if err != nil {
			return err
		}
		return s.prepull(ctx, jc, c, p.Registry)
	}
}

// setupRegion is the step "region" (Create the region and its project namespace) of setupSteps.
func (s *Service) setupRegion(p SetupParams, cluster func(jc *engine.JobContext) (*kube.Cluster, SetupSecret, error), chk *CheckResult) func(ctx context.Context, jc *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		c, sec, err := cluster(jc)
		if err != nil {
			return err
		}
		if chk == nil { // resumed after a restart
			if chk, err = s.CheckCluster(ctx, "", []byte(sec.Kubeconfig), nil); err != nil {
				return err
			}
		}
		r, err := s.Store.RegionByName(ctx, p.Name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			r, _ = NewRegionRecord(p, sec, chk)
			if p.Registry.Mode != "" && p.Registry.Mode != store.RegistryNone {
				r.RegistryStatus, r.RegistryAddress = store.ComponentReady, p.Registry.Address()
			}
			if err := s.AdoptClusterAgentToken(ctx, r); err != nil {
				return err
			}
			if err := s.Store.CreateRegion(ctx, r); err != nil {
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
		if _, err := ensureNamespace(ctx, jc, c, p.Name, map[string]string{"runr.dev/region": p.Name, "runr.dev/setup": jc.Job.ID}); err != nil {
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
		exist, err := ApplyWorkers(ctx, c, p.Nodes, nil)
		if err != nil {
			return err
		}
		jc.Note("Labelled and tainted %d node(s) %s=%s:NoSchedule: %v", len(exist), DedicatedKey, DedicatedValue, exist)
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
		r, err := s.jobRegion(ctx, jc)
		if err != nil {
			return err
		}
		if j, err := s.Store.ActiveJob(ctx, r.ID, KindRedisInstall); err == nil {
			jc.Note("The managed Redis is queued (job %s)", j.ID)
			return nil
		}
		j, err := s.EnqueueRedisInstall(ctx, r, jc.Job.CreatedBy)
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

// registryInstallSteps set up (or replace) the registry of an existing region.
func (s *Service) registryInstallSteps(p RegistryParams) []engine.Step {
	withCluster := func(f func(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, sec RegistrySecrets) error) func(context.Context, *engine.JobContext) error {
		return func(ctx context.Context, jc *engine.JobContext) error {
			_, c, err := s.regionAndCluster(ctx, jc)
			if err != nil {
				return err
			}
			sec, err := decodeSecret[RegistrySecrets](jc)
			if err != nil {
				return err
			}
			return f(ctx, jc, c, sec)
		}
	}
	return []engine.Step{
		{Name: "storage", Title: "Test the storage", Run: withCluster(func(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, sec RegistrySecrets) error {
			s.record(s.Store.UpdateRegistry(ctx, jc.Job.Region(), store.RegistryUpdate{Status: store.Ptr(store.ComponentInstalling), Message: store.Ptr("")}))
			return s.storageTest(ctx, jc, c, p, sec)
		})},
		{Name: "zot", Title: "Install Zot", Run: withCluster(func(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, sec RegistrySecrets) error {
			return s.installZot(ctx, jc, c, p, sec)
		})},
		{Name: "mirror", Title: "Node mirror", Run: withCluster(func(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, _ RegistrySecrets) error {
			return s.installMirror(ctx, jc, c, p)
		})},
		{Name: "prepull", Title: "Pre-pull common images", Run: withCluster(func(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, _ RegistrySecrets) error {
			return s.prepull(ctx, jc, c, p)
		})},
		{Name: "record", Title: "Record the registry", Run: withCluster(func(ctx context.Context, jc *engine.JobContext, _ *kube.Cluster, sec RegistrySecrets) error {
			jc.Note("Registry %s at %s", p.Mode, p.Address())
			return s.Store.UpdateRegistry(ctx, jc.Job.Region(), store.RegistryUpdate{Mode: store.Ptr(p.Mode), Status: store.Ptr(store.ComponentReady), Message: store.Ptr(""), Config: store.Ptr(p.Config()), Secret: store.Ptr(p.SecretValue(sec)), Address: store.Ptr(p.Address())})
		})},
	}
}

// regionAndCluster loads the job's region and its cluster access.
func (s *Service) regionAndCluster(ctx context.Context, jc *engine.JobContext) (*store.Region, *kube.Cluster, error) {
	r, err := s.jobRegion(ctx, jc)
	if err != nil {
		return nil, nil, err
	}
	c, err := s.RegionCluster(r)
	if err != nil {
		return nil, nil, err
	}
	return r, c, nil
}

// record logs (does not return) a failure to record a region's state: used in steps and
// hooks whose own outcome matters more.
func (s *Service) record(err error) {
	if err != nil {
		s.Log.Warn("record the region's state", "err", err)
	}
}

// Job kinds of Knative (defined with their steps in knative.go).
const (
	KindInstallOperator = "install-operator"
	KindInstallServing  = "install-serving"
)

// Kinds of region preparation and registry tests.
const (
	KindRegionInit   = "region-init"
	KindRegistryTest = "registry-test"
	KindApplyWorkers = "apply-workers"
)

// WorkersParams select a region's dedicated workers.
type WorkersParams struct {
	Nodes []string `json:"nodes"`
}

func (s *Service) registerRegionKinds() {
	workersStep := func(p WorkersParams) engine.Step {
		return engine.Step{Name: "workers", Title: "Dedicated workers", Run: func(ctx context.Context, jc *engine.JobContext) error {
			r, c, err := s.regionAndCluster(ctx, jc)
			if err != nil {
				return err
			}
			exist, err := ApplyWorkers(ctx, c, p.Nodes, r.Nodes)
			if err != nil {
				return err
			}
			if len(p.Nodes) == 0 {
				jc.Note("No dedicated workers: projects run on every schedulable node")
			} else {
				jc.Note("Dedicated workers: %v (label and taint %s=%s:NoSchedule)", exist, DedicatedKey, DedicatedValue)
			}
			return s.Store.SetRegionNodes(ctx, r.ID, exist)
		}}
	}
	s.Engine.Register(&engine.Kind{
		Name: KindRegionInit,
		Plan: func(jc *engine.JobContext) ([]engine.Step, error) {
			var p WorkersParams
			if err := jc.Params(&p); err != nil {
				return nil, err
			}
			return []engine.Step{
				{Name: "namespace", Title: "Create the project namespace", Run: func(ctx context.Context, jc *engine.JobContext) error {
					r, c, err := s.regionAndCluster(ctx, jc)
					if err != nil {
						return err
					}
					if _, err := ensureNamespace(ctx, jc, c, r.Name, map[string]string{"runr.dev/region": r.Name}); err != nil {
						return err
					}
					jc.Note("Namespace %s is ready for the region's projects", r.Name)
					return nil
				}},
				workersStep(p),
			}, nil
		},
	})
	s.Engine.Register(&engine.Kind{
		Name: KindApplyWorkers,
		Plan: func(jc *engine.JobContext) ([]engine.Step, error) {
			var p WorkersParams
			if err := jc.Params(&p); err != nil {
				return nil, err
			}
			return []engine.Step{workersStep(p)}, nil
		},
	})
	s.Engine.Register(&engine.Kind{
		Name: KindRegistryTest,
		Plan: func(jc *engine.JobContext) ([]engine.Step, error) {
			var p RegistryParams
			if err := jc.Params(&p); err != nil {
				return nil, err
			}
			return []engine.Step{{Name: "test", Title: "Test the registry storage from the cluster", Run: func(ctx context.Context, jc *engine.JobContext) error {
				_, c, err := s.regionAndCluster(ctx, jc)
				if err != nil {
					return err
				}
				sec, err := decodeSecret[RegistrySecrets](jc)
				if err != nil {
					return err
				}
				return s.storageTest(ctx, jc, c, p, sec)
			}}}, nil
		},
	})
}
