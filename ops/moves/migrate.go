package moves

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/admission"
	"runr.dev/console/ops/data"
	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/gpu"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/ops/preflight"
	"runr.dev/console/ops/projects"
	"runr.dev/console/ops/redis"
	"runr.dev/console/ops/registry"
	"runr.dev/console/ops/statusblock"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// Job kinds of region moves.
const (
	KindMove     = "region-migrate"
	KindRollback = "region-migrate-rollback"
)

// Deadline is how long a move waits in dns_check before it completes by itself.
const Deadline = 48 * time.Hour

// Running reports whether a move is under way (a second one is refused).
func Running(status store.MigrationStatus) bool { return status.Running() }

// migrationHad records what the region had before a move, to bring it to the new cluster.
type migrationHad struct {
	Serving  bool   `json:"serving"`
	Version  string `json:"version"`
	Registry bool   `json:"registry"`
	Redis    bool   `json:"redis"`
	TLS      bool   `json:"tls"`
}

func (s *Service) saveDetail(ctx context.Context, r *store.Region, f func(d *store.MigrationDetail)) error {
	d := r.MigrationDetail.V
	f(&d)
	r.MigrationDetail.V = d
	return s.Store.UpdateMove(ctx, r.ID, store.MoveUpdate{Detail: store.Ptr(d)})
}

// tolerate runs a part of a move whose failure is logged while the move goes on.
func (s *Service) tolerate(ctx context.Context, jc *engine.JobContext, r *store.Region, what string, f func() error) {
	err := f()
	if err == nil || errors.Is(err, engine.ErrSkip) {
		return
	}
	jc.Warnf("%s failed; the move goes on: %v", what, err)
	_ = s.saveDetail(ctx, r, func(d *store.MigrationDetail) {
		d.Steps = append(d.Steps, store.MigrationStep{Name: what, Status: "failed", Message: err.Error()})
	})
}

func (s *Service) migrationSteps() []engine.Step {
	return []engine.Step{
		{Name: "pending", Title: "Check the new cluster and switch to it", Run: s.movePending},
		s.RegionStep("workers", "Dedicated workers", s.moveWorkers),
		{Name: "knative", Title: "Knative Operator and Serving", Run: s.moveKnative},
		s.RegionStep("services", "Redis and the registry", s.moveServices),
		s.RegionStep("isolation", "Sandbox runtimes", s.moveIsolation),
		{Name: "gpu", Title: "GPU support", Run: s.moveGPU},
		s.RegionStep("data", "Data services and the Skupper site", s.moveData),
		s.RegionStep("extras", "What else the region had", s.moveExtras),
		s.RegionStep("domain", "Function domain on the new cluster", s.moveDomain),
		s.RegionStep("redeploy", "Deploy the projects again", s.moveRedeploy),
		{Name: "dns_check", Title: "Point DNS at the new cluster", Run: s.moveDNSCheck},
	}
}

// movePending is the step "pending" (Check the new cluster and switch to it) of migrationSteps.
func (s *Service) movePending(ctx context.Context, jc *engine.JobContext) error {
	r, err := s.JobRegion(ctx, jc)
	if err != nil {
		return err
	}
	if r.MigrationDetail.V.JobID == jc.Job.ID && r.OldKubeconfig != "" {
		jc.Note("Already switched to the new cluster")
		return nil
	}
	chk, err := s.Preflight.Check(ctx, "", []byte(jc.Secret), nil)
	if err != nil {
		return err
	}
	if !chk.OK {
		return fmt.Errorf("the new cluster cannot take the region: %s", chk.FirstFailure())
	}
	if owner, err := s.Preflight.OtherOwnerOn(ctx, chk.Server, r.Tenant(), r.ID); err != nil {
		return err
	} else if owner != nil {
		return errors.New(preflight.OtherOwnerRefusal)
	}
	had := migrationHad{Serving: r.ServingStatus == store.ComponentReady, Version: r.KnativeVersion, Registry: r.RegistryMode == store.RegistryInternal && r.RegistryStatus == store.ComponentReady,
		Redis: r.RedisMode == store.RedisManaged, TLS: r.FunctionTLSCert != ""}
	now := time.Now().UTC()
	detail := store.MigrationDetail{JobID: jc.Job.ID, StartedAt: &now, Had: map[string]any{"serving": had.Serving, "version": had.Version,
		"registry": had.Registry, "redis": had.Redis, "tls": had.TLS}}
	sandboxesHad(r.Isolation.V, detail.Had)
	gpuHad(r.GPU.V, detail.Had)
	dataHad(r, detail.Had)
	serving := store.ComponentNotInstalled
	if had.Serving {
		serving = store.ComponentInstalling
	}
	if err := s.Store.SwitchCluster(ctx, r.ID, store.ClusterSwitch{
		Kubeconfig: string(chk.Kubeconfig), ClusterServer: chk.Server, ClusterKey: kube.ClusterKey(chk.Server), K8sVersion: store.Ptr(chk.Version),
		Operator: store.OperatorUpdate{Status: store.Ptr(store.ComponentNotInstalled), Adopted: store.Ptr(false)},
		Serving:  store.ServingUpdate{Status: &serving, Adopted: store.Ptr(false), DNSResolved: store.Ptr(false)},
		Move: store.MoveUpdate{Status: store.Ptr(store.MigrationInProgress), Detail: &detail,
			OldKubeconfig: store.Ptr(r.Kubeconfig), OldExternalIP: store.Ptr(r.ExternalIP)},
	}); err != nil {
		return err
	}
	jc.Note("The region now uses %s (%s); the old kubeconfig and address %s are kept until the move completes", chk.Server, chk.Version, r.ExternalIP)
	return nil
}

// moveWorkers is the step "workers" (Dedicated workers) of migrationSteps.
func (s *Service) moveWorkers(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	if len(r.Nodes) == 0 {
		jc.Note("No dedicated workers")
		return engine.ErrSkip
	}
	exist, err := nodes.ApplyWorkers(ctx, c, r.Nodes, nil)
	if err != nil {
		return err
	}
	if len(exist) == 0 {
		jc.Note("None of the selected nodes (%s) exists on the new cluster: the selection is cleared, projects run on every schedulable node; select workers again in the Workers tab", strings.Join(r.Nodes, ", "))
	} else {
		jc.Note("Dedicated workers on the new cluster: %s", strings.Join(exist, ", "))
	}
	return s.Store.SetRegionNodes(ctx, r.ID, exist)
}

// moveKnative is the step "knative" (Knative Operator and Serving) of migrationSteps.
func (s *Service) moveKnative(ctx context.Context, jc *engine.JobContext) error {
	r, err := s.JobRegion(ctx, jc)
	if err != nil {
		return err
	}
	if serving, _ := r.MigrationDetail.V.Had["serving"].(bool); !serving {
		jc.Note("The region had no Knative Serving")
		return engine.ErrSkip
	}
	ver, _ := r.MigrationDetail.V.Had["version"].(string)
	if _, c, err := s.RegionAndCluster(ctx, jc); err == nil {
		if _, err := s.Knative.ChartFor(ctx, c, ver); err != nil {
			dv, derr := s.Knative.DefaultVersion(ctx, c)
			if derr != nil {
				return derr
			}
			jc.Warnf("Knative %s is not offered on the new cluster: installing %s", ver, dv.Version)
			ver = dv.Version
		}
	}
	steps := append(s.Knative.OperatorSteps(knative.OperatorParams{Namespace: r.OperatorNamespace, Version: ver}),
		s.Knative.ServingSteps(knative.ServingParams{Namespace: r.ServingNamespace, Version: ver})...)
	if err := kit.RunInline(ctx, jc, steps); err != nil {
		return err
	}
	jc.Note("Knative Serving %s with Traefik, Prometheus, Loki, the runr-agent and tracing runs on the new cluster", ver)
	return nil
}

// moveServices is the step "services" (Redis and the registry) of migrationSteps.
func (s *Service) moveServices(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	if redis, _ := r.MigrationDetail.V.Had["redis"].(bool); redis {
		s.tolerate(ctx, jc, r, "managed Redis", func() error { return s.Redis.InstallManaged(ctx, jc, c, r) })
	} else if r.RedisMode == store.RedisExternal {
		jc.Logf("The external Redis keeps its address %s", r.RedisAddress)
	} else if r.RedisMode == store.RedisInCluster {
		jc.Logf("The Redis in the cluster keeps its address %s: the new cluster must serve it at that Service", r.RedisAddress)
	}
	if reg, _ := r.MigrationDetail.V.Had["registry"].(bool); reg {
		p := registry.Params{Mode: store.RegistryInternal, StorageType: r.RegistryConfig.V.StorageType, StorageClass: r.RegistryConfig.V.StorageClass,
			Size: r.RegistryConfig.V.Size, S3Endpoint: r.RegistryConfig.V.S3Endpoint, S3Bucket: r.RegistryConfig.V.S3Bucket,
			S3Region: r.RegistryConfig.V.S3Region, S3AccessKey: r.RegistryConfig.V.S3AccessKey}
		if p.StorageType == "" {
			p.StorageType = "pvc"
		}
		s.tolerate(ctx, jc, r, "internal registry", func() error {
			if err := s.Registry.InstallZot(ctx, jc, c, p, registry.Secrets{S3SecretKey: r.RegistrySecret}); err != nil && !errors.Is(err, engine.ErrSkip) {
				return err
			}
			if err := s.Registry.InstallMirror(ctx, jc, c, p); err != nil && !errors.Is(err, engine.ErrSkip) {
				return err
			}
			return s.Store.UpdateRegistry(ctx, r.ID, store.RegistryUpdate{Address: store.Ptr(p.Address()), Status: store.Ptr(store.ComponentReady)})
		})
	}
	jc.Note("Redis and the registry are on the new cluster")
	return nil
}

// moveExtras is the step "extras" (What else the region had) of migrationSteps.
func (s *Service) moveExtras(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	if tls, _ := r.MigrationDetail.V.Had["tls"].(bool); tls && r.FunctionTLSCert != "" {
		s.tolerate(ctx, jc, r, "function TLS", func() error {
			return s.Domains.ApplyFunctionTLS(ctx, jc, c, r, r.FunctionTLSCert, r.FunctionTLSKey, false)
		})
	}
	s.tolerate(ctx, jc, r, "admission policy", func() error { return s.Admission.MoveAdmission(ctx, jc, r) })
	if r.Status != store.RegionActive && r.ServingStatus == store.ComponentReady {
		s.tolerate(ctx, jc, r, "status block", func() error { return s.StatusBlock.ApplyBlock(ctx, jc, c, r) })
	}
	jc.Note("Function TLS, the admission policy and the status block follow the region")
	return nil
}

// moveDomain is the step "domain" (Function domain on the new cluster) of migrationSteps.
func (s *Service) moveDomain(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	if r.Settings.V.KnativeDomain == "" || r.ServingStatus != store.ComponentReady {
		jc.Note("No function domain to configure")
		return engine.ErrSkip
	}
	if err := domains.SetDomain(ctx, c, r.ServingNamespace, r.Name, r.Settings.V.KnativeDomain, ""); err != nil {
		return err
	}
	jc.Note("Knative on the new cluster serves %s", r.Settings.V.KnativeDomain)
	return nil
}

// moveRedeploy is the step "redeploy" (Deploy the projects again) of migrationSteps.
func (s *Service) moveRedeploy(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	return s.redeploy(ctx, jc, c, r)
}

// moveDNSCheck is the step "dns_check" (Point DNS at the new cluster) of migrationSteps.
func (s *Service) moveDNSCheck(ctx context.Context, jc *engine.JobContext) error {
	r, err := s.JobRegion(ctx, jc)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	if err := s.Store.UpdateMove(ctx, r.ID, store.MoveUpdate{Status: store.Ptr(store.MigrationDNSCheck), DNSCheckAt: store.Ptr(now)}); err != nil {
		return err
	}
	deadline := now.Add(Deadline).Format(time.RFC1123)
	if !WaitsForDNS(r) {
		jc.Note("%s: there is no DNS record to wait for. Check the new cluster, then Complete Migration; otherwise the move completes by itself by %s", NoDNSToWaitFor(r), deadline)
		return nil
	}
	jc.Note("Point the wildcard record *.%s at %s; the move completes when dns-check.%s resolves there, or by %s", r.Settings.V.KnativeDomain, r.ExternalIP, r.Settings.V.KnativeDomain, deadline)
	return nil
}

// WaitsForDNS reports whether a move in dns_check can complete by itself when DNS
// reaches the new cluster: the region has a function domain and an external address.
func WaitsForDNS(r *store.Region) bool {
	return r.Settings.V.KnativeDomain != "" && r.ExternalIP != ""
}

// NoDNSToWaitFor says why a move has no DNS to wait for ("" when it has).
func NoDNSToWaitFor(r *store.Region) string {
	switch {
	case r.Settings.V.KnativeDomain == "" && r.ServingStatus == store.ComponentReady:
		return "The region has no function domain (set the platform's base domain on Administration → Platform)"
	case r.Settings.V.KnativeDomain == "":
		return "The region has no function domain (Knative Serving is not installed)"
	case r.ExternalIP == "":
		return "The new cluster's Traefik has no external address yet"
	}
	return ""
}

// redeploy deploys again every project of the region that runs, with the deploy checks;
// a refused project is shut down with the reason; stopped projects stay stopped.
func (s *Service) redeploy(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region) error {
	ps, err := s.Store.ListProjects(ctx, r.ID)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(ps, func(p store.Project) bool { return p.Demo && p.State == store.ProjectRunning }) {
		// The demo mailer sends to the SMTP catcher, which is no project: it moves too.
		if err := s.Projects.DemoSMTP(ctx, jc, r, c); err != nil {
			return err
		}
	}
	deployed, refused, stopped := 0, 0, 0
	for i := range ps {
		p := &ps[i]
		switch p.State {
		case store.ProjectStopped:
			stopped++
			jc.Logf("%s is stopped: it moves with the region and stays stopped", p.Slug)
			continue
		case store.ProjectNone:
			continue
		}
		if err := s.Projects.DeployCheck(ctx, r, p, false); err != nil {
			refused++
			jc.Warnf("%s is refused: %v", p.Slug, err)
			if err := s.Store.SetProjectState(ctx, p.ID, store.ProjectNone, "not deployed on the new cluster: "+err.Error(), ""); err != nil {
				return err
			}
			continue
		}
		if err := s.Projects.Deploy(ctx, jc, c, r, p); err != nil {
			return fmt.Errorf("deploy %s: %w", p.Slug, err)
		}
		if err := s.Store.SetProjectState(ctx, p.ID, store.ProjectRunning, "", p.Image); err != nil {
			return err
		}
		deployed++
	}
	jc.Note("Deployed %d project(s) again; %d refused; %d stopped", deployed, refused, stopped)
	return nil
}

// Complete ends a move: the old kubeconfig and address are forgotten; nothing
// is removed from the old cluster.
func (s *Service) Complete(ctx context.Context, r *store.Region, why string) error {
	d := r.MigrationDetail.V
	d.Steps = append(d.Steps, store.MigrationStep{Name: "completed", Status: "done", Message: why})
	done, err := s.Store.CompleteMove(ctx, r.ID, d)
	if err != nil {
		return err
	}
	if !done {
		return &problem.Refused{Reason: "The move of " + r.Name + " is not in dns_check any more (rolled back or completed meanwhile): nothing to complete."}
	}
	s.Log.Info("region move completed", "region", r.Name, "why", why)
	return nil
}

// logCompletion logs a move's completion that failed; one that found the move rolled back
// meanwhile is only noted.
func (s *Service) logCompletion(r *store.Region, err error) {
	var refused *problem.Refused
	switch {
	case errors.As(err, &refused):
		s.Log.Info("region move not completed", "region", r.Name, "why", refused.Reason)
	case err != nil:
		s.Log.Warn("complete region move", "region", r.Name, "err", err)
	}
}

// CompleteMoves completes the moves whose DNS reaches the new address, or whose 48 hours passed.
func (s *Service) CompleteMoves(ctx context.Context) {
	rs, err := s.Store.MovingRegions(ctx)
	if err != nil {
		s.Log.Warn("complete region moves: list", "err", err)
		return
	}
	for _, m := range rs {
		if m.Status != store.MigrationDNSCheck {
			continue
		}
		r, err := s.Store.RegionByID(ctx, m.ID)
		if err != nil {
			s.Log.Warn("complete region move: read", "region", m.Name, "err", err)
			continue
		}
		if m.DNSCheckAt != nil && time.Since(*m.DNSCheckAt) > Deadline {
			s.logCompletion(r, s.Complete(ctx, r, "48 hours in dns_check passed"))
			continue
		}
		if !WaitsForDNS(r) {
			continue // completed by hand, or by the deadline (moveDNSCheck said so)
		}
		cctx, cancel := context.WithTimeout(ctx, s.Cfg.StatusTimeout)
		ok, reason, err := (&domains.Resolver{Server: s.Cfg.DNSResolver}).DNSCheck(cctx, r.Settings.V.KnativeDomain, r.ExternalIP)
		cancel()
		if err == nil && ok {
			s.logCompletion(r, s.Complete(ctx, r, "DNS reaches the new cluster: "+reason))
		}
	}
}

// MoveDeadline is how long a move may run (the spec: "at most 30 minutes"); past it the
// job stops, the move reads failed with the reason, and a retry or a rollback follows.
const MoveDeadline = 30 * time.Minute

func (s *Service) registerKinds() {
	s.Engine.Register(&engine.Kind{Name: KindMove, Deadline: MoveDeadline, Plan: func(jc *engine.JobContext) ([]engine.Step, error) { return s.migrationSteps(), nil },
		Finished: func(ctx context.Context, jc *engine.JobContext, err error) {
			if err != nil {
				if r, rerr := s.JobRegion(ctx, jc); rerr == nil {
					_ = s.saveDetail(ctx, r, func(d *store.MigrationDetail) { d.Error = err.Error() })
				}
				s.Record(s.Store.UpdateMove(ctx, jc.Job.Region(), store.MoveUpdate{Status: store.Ptr(store.MigrationFailed)}))
			}
		}})
	s.Engine.Register(&engine.Kind{Name: KindRollback, Plan: func(jc *engine.JobContext) ([]engine.Step, error) {
		return []engine.Step{
			{Name: "restore", Title: "Restore the old kubeconfig and address", Run: func(ctx context.Context, jc *engine.JobContext) error {
				r, err := s.JobRegion(ctx, jc)
				if err != nil {
					return err
				}
				if r.OldKubeconfig == "" {
					jc.Note("The move never switched clusters: nothing to restore")
					return nil
				}
				kc, err := kube.ParseKubeconfig([]byte(r.OldKubeconfig))
				if err != nil {
					return err
				}
				if err := s.Store.SwitchCluster(ctx, r.ID, store.ClusterSwitch{Kubeconfig: r.OldKubeconfig, ExternalIP: r.OldExternalIP,
					ClusterServer: kc.Server, ClusterKey: kube.ClusterKey(kc.Server),
					Operator: store.OperatorUpdate{Status: store.Ptr(store.ComponentReady)}, Serving: store.ServingUpdate{Status: store.Ptr(store.ComponentReady)},
					Move: store.MoveUpdate{OldKubeconfig: store.Ptr(""), OldExternalIP: store.Ptr("")}}); err != nil {
					return err
				}
				jc.Note("The region uses %s again, at %s; what the move installed on the new cluster stays there", kc.Server, r.OldExternalIP)
				return nil
			}},
			s.RegionStep("redeploy", "Deploy the running projects there again", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
				return s.redeploy(ctx, jc, c, r)
			}),
			{Name: "record", Title: "Record", Run: func(ctx context.Context, jc *engine.JobContext) error {
				jc.Note("The move is rolled back")
				s.Record(s.Store.UpdateMove(ctx, jc.Job.Region(), store.MoveUpdate{Status: store.Ptr(store.MigrationRolledBack), ClearDNSCheckAt: true}))
				return nil
			}},
		}, nil
	}})
}

// Input is a region's move: the body of POST /api/knative-regions/{id}/migrate.
type Input struct {
	Kubeconfig   string `json:"kubeconfig"`
	DataLocation string `json:"data_location"`
}

// Start checks and queues a region's move to the cluster of a kubeconfig.
func (s *Service) Start(ctx context.Context, actor kit.Actor, r *store.Region, in Input) (*store.Job, error) {
	if Running(r.MigrationStatus) {
		return nil, &problem.Refused{Reason: "The region is moving already (" + string(r.MigrationStatus) + "): complete or roll back that move first."}
	}
	if !kit.ResidencyAllows(r.DataLocation, in.DataLocation) {
		return nil, &problem.Refused{Field: "data_location", Reason: "The region's data stays in " + r.DataLocation + ": the new cluster must be there (data_location " + r.DataLocation + ")."}
	}
	kc, err := kube.ParseKubeconfig([]byte(in.Kubeconfig))
	if err != nil {
		return nil, &problem.Refused{Field: "kubeconfig", Reason: err.Error()}
	}
	if owner, err := s.Preflight.OtherOwnerOn(ctx, kc.Server, r.Tenant(), r.ID); err != nil {
		return nil, err
	} else if owner != nil {
		return nil, &problem.Refused{Field: "kubeconfig", Reason: preflight.OtherOwnerRefusal}
	}
	j, err := s.Enqueue(ctx, engine.Request{Kind: KindMove, Title: "Move region " + r.Name + " to another cluster",
		Subject: r.ID, Secret: in.Kubeconfig, CreatedBy: actor.Email})
	if err != nil {
		return nil, err
	}
	// The job may have started already (a runner claims it at once): then its first step
	// has recorded the move, and "pending" would erase what the region had.
	if err := s.Store.MarkMovePending(ctx, r.ID, j.ID); err != nil {
		return nil, fmt.Errorf("start the move of %s: %w", r.Name, err)
	}
	s.Log.Info("region move started", "region", r.Name, "by", actor.Email)
	return j, nil
}

// CompleteByHand completes a move in dns_check.
func (s *Service) CompleteByHand(ctx context.Context, actor kit.Actor, r *store.Region) error {
	if r.MigrationStatus != store.MigrationDNSCheck {
		return &problem.Refused{Reason: "A move completes by hand only in dns_check; this region's is " + r.MigrationStatus.String() + "."}
	}
	return s.Complete(ctx, r, "completed by "+actor.Email)
}

// Rollback queues the rollback of a move in dns_check or failed.
func (s *Service) Rollback(ctx context.Context, actor kit.Actor, r *store.Region) (*store.Job, error) {
	if r.MigrationStatus != store.MigrationDNSCheck && r.MigrationStatus != store.MigrationFailed {
		return nil, &problem.Refused{Reason: "A move rolls back only in dns_check or failed; this region's is " + r.MigrationStatus.String() + "."}
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindRollback, Title: "Roll back the move of " + r.Name, Subject: r.ID, CreatedBy: actor.Email})
}

// Service moves regions from one cluster to another: everything the region had is
// installed on the new cluster, the DNS is awaited, and a move can be rolled back.
type Service struct {
	*kit.Kit
	Deps
}

// Deps are the features a move installs again on the new cluster.
type Deps struct {
	Preflight   *preflight.Service
	Knative     *knative.Service
	Registry    *registry.Service
	Redis       *redis.Service
	Isolation   *isolation.Service
	GPU         *gpu.Service
	Data        *data.Service
	Admission   *admission.Service
	Projects    *projects.Service
	Domains     *domains.Service
	StatusBlock *statusblock.Service
}

// New builds the moves and registers their kinds of job (call CompleteMoves after each sweep).
func New(k *kit.Kit, d Deps) *Service {
	s := &Service{Kit: k, Deps: d}
	s.registerKinds()
	return s
}
