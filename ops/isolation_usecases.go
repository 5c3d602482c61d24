package ops

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"runr.dev/console/engine"
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
	b, err := s.busy(ctx, r.ID, SandboxKinds...)
	if err != nil {
		return err
	}
	if b {
		return &Refused{Reason: "A sandbox runtime job of this region runs already; wait for it to finish."}
	}
	return nil
}

// InstallSandbox queues the install of a sandbox runtime: Kata Containers with the
// picked hypervisors, gVisor, or WebAssembly on the selected nodes (none: every node
// with containerd).
func (s *Service) InstallSandbox(ctx context.Context, actor Actor, r *store.Region, in SandboxParams) (*store.Job, error) {
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
		return nil, &Invalid{Fields: fields}
	}
	if err := s.sandboxBusy(ctx, r); err != nil {
		return nil, err
	}
	if in.Runtime != store.RuntimeWasm {
		in.Nodes = nil
	}
	names := map[string]string{store.RuntimeKata: "Kata Containers", store.RuntimeGVisor: "gVisor", store.RuntimeWasm: "WebAssembly support"}
	return s.Enqueue(ctx, engine.Request{Kind: KindSandboxInstall, Title: "Install " + names[in.Runtime] + " on " + r.Name,
		Subject: r.ID, Params: in, CreatedBy: actor.Email})
}

// ProbeSandboxNodes queues the KVM probe: every node gets the label runr.dev/kvm saying
// whether it has /dev/kvm.
func (s *Service) ProbeSandboxNodes(ctx context.Context, actor Actor, r *store.Region) (*store.Job, error) {
	if err := s.sandboxBusy(ctx, r); err != nil {
		return nil, err
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindSandboxProbe, Title: "Probe the nodes of " + r.Name + " for /dev/kvm",
		Subject: r.ID, CreatedBy: actor.Email})
}

// UninstallSandbox queues the removal of a sandbox runtime; it is refused while pods
// still run with its RuntimeClasses (they are named).
func (s *Service) UninstallSandbox(ctx context.Context, actor Actor, r *store.Region, runtime string) (*store.Job, error) {
	if !slices.Contains(SandboxRuntimes, runtime) {
		return nil, &Invalid{Fields: map[string]string{"runtime": "Choose kata, gvisor or wasm."}}
	}
	rt := r.Isolation.V.Runtime(runtime)
	if rt.State() == store.ComponentNotInstalled {
		return nil, &Refused{Reason: runtime + " is not installed on this region."}
	}
	if err := s.sandboxBusy(ctx, r); err != nil {
		return nil, err
	}
	c, err := s.RegionCluster(r)
	if err != nil {
		return nil, err
	}
	used, err := PodsUsing(ctx, c, rt.Classes)
	if err != nil {
		return nil, err
	}
	if len(used) > 0 {
		return nil, &Refused{Reason: "Pods still run with " + strings.Join(rt.Classes, ", ") + ": " + strings.Join(used, ", ") + ". Move or stop them first."}
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindSandboxUninstall, Title: "Remove " + runtime + " from " + r.Name,
		Subject: r.ID, Params: SandboxParams{Runtime: runtime}, CreatedBy: actor.Email})
}

// SetWorkloadClasses sets the runtime class of each workload kind it is given (the others
// keep theirs): runc or a class of an installed runtime.
func (s *Service) SetWorkloadClasses(ctx context.Context, actor Actor, r *store.Region, in map[string]string) (map[string]string, error) {
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
			fields[kind] = fmt.Sprintf("%q is not installed on this region; choose runc or %s.", class, orNoneList(installed))
		default:
			classes[kind] = class
		}
	}
	if len(fields) > 0 {
		return nil, &Invalid{Fields: fields}
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
