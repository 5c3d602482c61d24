package isolation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// SandboxRuntimes are the runtimes of the Isolation tab, strongest isolation first.
var SandboxRuntimes = []string{store.RuntimeKata, store.RuntimeGVisor, store.RuntimeWasm}

// InstalledClasses lists the RuntimeClasses of a region's ready runtimes, strongest
// isolation first (Kata's, gVisor's, then WebAssembly's).
func InstalledClasses(iso store.Isolation) []string {
	var out []string
	for _, name := range SandboxRuntimes {
		if rt := iso.Runtime(name); rt.Ready() {
			out = append(out, rt.Classes...)
		}
	}
	return out
}

// SandboxKinds are the job kinds of the Isolation tab.
var SandboxKinds = []string{KindSandboxInstall, KindSandboxUninstall, KindSandboxProbe}

// sandboxBusy refuses a second sandbox job while one runs on the region.
func (s *Service) sandboxBusy(ctx context.Context, r *store.Region) error {
	b, err := s.Busy(ctx, r.ID, SandboxKinds...)
	if err != nil {
		return err
	}
	if b {
		return &problem.Refused{Reason: "A sandbox runtime job of this region runs already; wait for it to finish."}
	}
	return nil
}

// InstallSandbox queues the install of a sandbox runtime: Kata Containers with the
// picked hypervisors, gVisor, or WebAssembly on the selected nodes (none: every node
// with containerd).
func (s *Service) InstallSandbox(ctx context.Context, actor kit.Actor, r *store.Region, in SandboxParams) (*store.Job, error) {
	in.SharedWith = "" // the console decides what is shared, never the request
	fields := map[string]string{}
	switch in.Runtime {
	case store.RuntimeKata:
		if len(in.Hypervisors) == 0 {
			fields["hypervisors"] = "Pick at least one hypervisor: " + strings.Join(Hypervisors, ", ") + "."
		}
		for _, h := range in.Hypervisors {
			if !slices.Contains(Hypervisors, h) {
				fields["hypervisors"] = fmt.Sprintf("%q is not a hypervisor of kata-deploy; choose from %s.", h, strings.Join(Hypervisors, ", "))
			}
		}
	case store.RuntimeGVisor, store.RuntimeWasm:
	default:
		fields["runtime"] = "Choose kata, gvisor or wasm."
	}
	if len(fields) > 0 {
		return nil, &problem.Invalid{Fields: fields}
	}
	if err := s.sandboxBusy(ctx, r); err != nil {
		return nil, err
	}
	owner, theirs, err := s.neighbourRuntime(ctx, r, in.Runtime)
	if err != nil {
		return nil, err
	}
	if owner != "" {
		// The cluster has it already: this region shares that install, as it is.
		if in.Runtime == store.RuntimeKata && !sameHypervisors(in.Hypervisors, theirs.Hypervisors) {
			return nil, &problem.Invalid{Fields: map[string]string{"hypervisors": fmt.Sprintf("Kata Containers runs on this cluster for region %s with %s: pick the same to share it, or change them on %s.",
				owner, strings.Join(theirs.Hypervisors, ", "), owner)}}
		}
		return s.Enqueue(ctx, engine.Request{Kind: KindSandboxInstall, Title: "Share the " + runtimeLabels[in.Runtime] + " of " + owner + " with " + r.Name,
			Subject: r.ID, Params: SandboxParams{Runtime: in.Runtime, SharedWith: owner}, CreatedBy: actor.Email})
	}
	if in.Runtime == store.RuntimeKata {
		if err := s.kataInstallAllowed(ctx, r, in.Hypervisors); err != nil {
			return nil, err
		}
	}
	if in.Runtime != store.RuntimeWasm {
		in.Nodes = nil
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindSandboxInstall, Title: "Install " + runtimeLabels[in.Runtime] + " on " + r.Name,
		Subject: r.ID, Params: in, CreatedBy: actor.Email})
}

// runtimeLabels name the runtimes in job titles.
var runtimeLabels = map[string]string{store.RuntimeKata: "Kata Containers", store.RuntimeGVisor: "gVisor", store.RuntimeWasm: "WebAssembly support"}

// NoKataNode is why Kata cannot be installed on a region none of whose nodes can run it.
const NoKataNode = "No node can run Kata Containers: each needs containerd or CRI-O, an architecture with a hypervisor, and /dev/kvm (the Isolation tab gives each node's reason)."

// kataInstallAllowed refuses a Kata install on a region none of whose nodes can run it, one
// whose picks run on none of the architectures of the nodes that can run Kata (422 on
// hypervisors), or one that would delete RuntimeClasses of the installed Kata still in use
// (kataDropRefusal).
func (s *Service) kataInstallAllowed(ctx context.Context, r *store.Region, hypervisors []string) error {
	c, err := s.RegionCluster(r)
	if err != nil {
		return err
	}
	nodes, err := SandboxNodes(ctx, c)
	if err != nil {
		return &problem.Unreachable{Region: r.Name, Err: err}
	}
	archs := map[string][]string{}
	for _, n := range nodes {
		if KataCandidate(n) {
			archs[n.Arch] = append(archs[n.Arch], n.Name)
		}
	}
	if len(nodes) > 0 && len(archs) == 0 {
		return &problem.Refused{Reason: NoKataNode}
	}
	if len(archs) > 0 {
		if err := kataPicksRunnable(hypervisors, archs); err != nil {
			return &problem.Invalid{Fields: map[string]string{"hypervisors": upperFirst(err.Error()) + "."}}
		}
	}
	reason, err := kataDropRefusal(ctx, r, c, hypervisors)
	if err != nil {
		return &problem.Unreachable{Region: r.Name, Err: err}
	}
	if reason != "" {
		return &problem.Refused{Reason: reason}
	}
	return nil
}

// kataDropRefusal says why a Kata install with these hypervisors is refused ("" when it
// is not): kata-deploy's upgrade deletes the RuntimeClasses of the hypervisors it no
// longer has, and workload kinds are mapped to, or pods run with, one of them.
func kataDropRefusal(ctx context.Context, r *store.Region, c *kube.Cluster, hypervisors []string) (string, error) {
	kata := r.Isolation.V.Kata
	if kata.State() == store.ComponentNotInstalled {
		return "", nil
	}
	var keep, dropped []string
	for _, h := range hypervisors {
		keep = append(keep, KataRuntimeClass(h))
	}
	for _, class := range kata.Classes {
		if !slices.Contains(keep, class) {
			dropped = append(dropped, class)
		}
	}
	if len(dropped) == 0 {
		return "", nil
	}
	var mapped []string
	for _, kind := range store.WorkloadKinds {
		if class := r.Isolation.V.Class(kind); slices.Contains(dropped, class) {
			mapped = append(mapped, kind+" ("+class+")")
		}
	}
	pods, err := PodsUsing(ctx, c, dropped)
	if err != nil {
		return "", err
	}
	if len(mapped) == 0 && len(pods) == 0 {
		return "", nil
	}
	var uses []string
	if len(mapped) > 0 {
		uses = append(uses, "the workload kinds "+strings.Join(mapped, ", ")+" are mapped to")
	}
	if len(pods) > 0 {
		uses = append(uses, "the pods "+strings.Join(pods, ", ")+" run with")
	}
	what := "RuntimeClass " + dropped[0]
	if len(dropped) > 1 {
		what = "RuntimeClasses " + strings.Join(dropped, ", ")
	}
	return fmt.Sprintf("Installing Kata with %s would delete %s, which %s. Map those kinds to another class and move or stop those pods first, or keep their hypervisors among the picks.",
		strings.Join(sortedCopy(hypervisors), ", "), what, strings.Join(uses, " and ")), nil
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// ProbeSandboxNodes queues the KVM probe: every node gets the label runr.dev/kvm saying
// whether it has /dev/kvm.
func (s *Service) ProbeSandboxNodes(ctx context.Context, actor kit.Actor, r *store.Region) (*store.Job, error) {
	if err := s.sandboxBusy(ctx, r); err != nil {
		return nil, err
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindSandboxProbe, Title: "Probe the nodes of " + r.Name + " for /dev/kvm",
		Subject: r.ID, CreatedBy: actor.Email})
}

// UninstallSandbox queues the removal of a sandbox runtime; it is refused while pods
// still run with its RuntimeClasses (they are named).
func (s *Service) UninstallSandbox(ctx context.Context, actor kit.Actor, r *store.Region, runtime string) (*store.Job, error) {
	if !slices.Contains(SandboxRuntimes, runtime) {
		return nil, &problem.Invalid{Fields: map[string]string{"runtime": "Choose kata, gvisor or wasm."}}
	}
	rt := r.Isolation.V.Runtime(runtime)
	if rt.State() == store.ComponentNotInstalled {
		return nil, &problem.Refused{Reason: runtime + " is not installed on this region."}
	}
	if err := s.sandboxBusy(ctx, r); err != nil {
		return nil, err
	}
	req := uninstallRequest(r, runtime)
	req.CreatedBy = actor.Email
	if rt.SharedWith != "" {
		// Only this region's share goes; the install stays the other region's.
		return s.Enqueue(ctx, req)
	}
	if sharers, err := s.sharers(ctx, r, runtime); err != nil {
		return nil, err
	} else if len(sharers) > 0 {
		return nil, &problem.Refused{Reason: fmt.Sprintf("Region %s shares this %s (the same cluster): remove it there first.", strings.Join(sharers, ", "), runtimeLabels[runtime])}
	}
	if err := s.unused(ctx, r, rt); err != nil {
		return nil, err
	}
	return s.Enqueue(ctx, req)
}

// sharers name the regions of r's cluster that share r's install of runtime.
func (s *Service) sharers(ctx context.Context, r *store.Region, runtime string) ([]string, error) {
	rs, err := s.OtherRegionsOnCluster(ctx, r)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, x := range rs {
		if x.Isolation.V.Runtime(runtime).SharedWith == r.Name {
			out = append(out, x.Name)
		}
	}
	return out, nil
}

// unused refuses the removal of a runtime while pods run with its RuntimeClasses (they
// are named).
func (s *Service) unused(ctx context.Context, r *store.Region, rt store.SandboxRuntime) error {
	c, err := s.RegionCluster(r)
	if err != nil {
		return err
	}
	used, err := PodsUsing(ctx, c, rt.Classes)
	if err != nil {
		return err
	}
	if len(used) > 0 {
		return &problem.Refused{Reason: "Pods still run with " + strings.Join(rt.Classes, ", ") + ": " + strings.Join(used, ", ") + ". Move or stop them first."}
	}
	return nil
}

func uninstallRequest(r *store.Region, runtime string) engine.Request {
	shared := r.Isolation.V.Runtime(runtime).SharedWith
	return engine.Request{Kind: KindSandboxUninstall, Title: "Remove " + runtime + " from " + r.Name, Subject: r.ID, Params: SandboxParams{Runtime: runtime, SharedWith: shared}}
}

// TeardownParts are the removals of the runtimes installed on r, for the removal of a
// region with what the console installed.
func (s *Service) TeardownParts(ctx context.Context, r *store.Region) ([]engine.Part, error) {
	var parts []engine.Part
	for _, runtime := range SandboxRuntimes {
		rt := r.Isolation.V.Runtime(runtime)
		if rt.State() == store.ComponentNotInstalled {
			continue
		}
		if err := s.unused(ctx, r, rt); err != nil {
			return nil, err
		}
		p, err := engine.PartOf(runtimeLabels[runtime], uninstallRequest(r, runtime))
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// SetWorkloadClasses sets the runtime class of each workload kind it is given (the others
// keep theirs): runc or a class of an installed runtime.
func (s *Service) SetWorkloadClasses(ctx context.Context, actor kit.Actor, r *store.Region, in map[string]string) (map[string]string, error) {
	installed := InstalledClasses(r.Isolation.V)
	fields := map[string]string{}
	classes := map[string]string{}
	for k, v := range r.Isolation.V.Classes {
		classes[k] = v
	}
	for kind, class := range in {
		switch {
		case !slices.Contains(store.WorkloadKinds, kind):
			fields[kind] = "Not a workload kind: " + strings.Join(store.WorkloadKinds, ", ") + "."
		case class != store.RuncClass && !slices.Contains(installed, class):
			fields[kind] = fmt.Sprintf("%q is not installed on this region; choose runc or %s.", class, kit.OrNoneList(installed))
		default:
			classes[kind] = class
		}
	}
	if len(fields) > 0 {
		return nil, &problem.Invalid{Fields: fields}
	}
	if err := s.Store.SetWorkloadClasses(ctx, r.ID, classes); err != nil {
		return nil, err
	}
	s.Log.Info("workload runtime classes set", "region", r.Name, "classes", classes, "by", actor.Email)
	return classes, nil
}

// WorkloadClassRefusal says why a workload kind cannot deploy on a region ("" when it
// can): its runtime class is not installed there.
func WorkloadClassRefusal(r *store.Region, kind string) string {
	class := r.Isolation.V.Class(kind)
	if class == store.RuncClass || slices.Contains(InstalledClasses(r.Isolation.V), class) {
		return ""
	}
	return fmt.Sprintf("%s run with the runtime class %s here, which region %s does not have installed", kind, class, r.Name)
}

// RegionSandboxNodes reads the sandbox readiness of a region's nodes.
func (s *Service) RegionSandboxNodes(ctx context.Context, r *store.Region) ([]SandboxNode, error) {
	c, err := s.RegionCluster(r)
	if err != nil {
		return nil, err
	}
	return SandboxNodes(ctx, c)
}
