package moves

import (
	"context"
	"slices"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// sandboxesHad records the sandbox runtimes a region had ready before a move, for the
// move's detail: Kata's hypervisors, gVisor, and the nodes WebAssembly was on.
func sandboxesHad(iso store.Isolation, had map[string]any) {
	if iso.Kata.Ready() {
		had["kata"] = iso.Kata.Hypervisors
	}
	if iso.GVisor.Ready() {
		had["gvisor"] = true
	}
	if iso.Wasm.Ready() {
		had["wasm"] = iso.Wasm.Nodes
	}
}

// stringsOf reads a list of strings back from a move's detail (JSON gives []any).
func stringsOf(v any) []string {
	var out []string
	switch xs := v.(type) {
	case []string:
		return xs
	case []any:
		for _, x := range xs {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// moveIsolation is the step "isolation" (Sandbox runtimes) of migrationSteps: Kata and
// gVisor are installed where the region had them ready, WebAssembly on the nodes it had
// that exist on the new cluster (else every node with containerd). A runtime that fails
// is recorded with its error and the move goes on.
func (s *Service) moveIsolation(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	had := r.MigrationDetail.V.Had
	var runtimes []isolation.SandboxParams
	if hv, ok := had["kata"]; ok {
		runtimes = append(runtimes, isolation.SandboxParams{Runtime: store.RuntimeKata, Hypervisors: stringsOf(hv)})
	}
	if g, _ := had["gvisor"].(bool); g {
		runtimes = append(runtimes, isolation.SandboxParams{Runtime: store.RuntimeGVisor})
	}
	if nodes, ok := had["wasm"]; ok {
		p, err := wasmOnNewCluster(ctx, c, stringsOf(nodes))
		if err != nil {
			return err
		}
		runtimes = append(runtimes, p)
	}
	for _, name := range isolation.SandboxRuntimes {
		if !slices.ContainsFunc(runtimes, func(p isolation.SandboxParams) bool { return p.Runtime == name }) && r.Isolation.V.Runtime(name).State() != store.ComponentNotInstalled {
			// The new cluster has none of what the old one had not ready.
			if err := s.Store.SetSandboxRuntime(ctx, r.ID, name, store.SandboxRuntime{Status: store.ComponentNotInstalled}); err != nil {
				return err
			}
		}
	}
	if len(runtimes) == 0 {
		jc.Note("The region had no sandbox runtime")
		return engine.ErrSkip
	}
	var moved []string
	for _, p := range runtimes {
		s.tolerate(ctx, jc, r, "sandbox runtime "+p.Runtime, func() error {
			err := kit.RunInline(ctx, jc, s.Isolation.InstallSteps(p))
			if err != nil {
				s.Record(s.Store.SetSandboxRuntime(ctx, r.ID, p.Runtime, store.SandboxRuntime{Status: store.ComponentError, Message: err.Error()}))
				return err
			}
			moved = append(moved, p.Runtime)
			return nil
		})
	}
	jc.Note("Sandbox runtimes on the new cluster: %s", kit.OrNoneList(moved))
	return nil
}

// wasmOnNewCluster keeps the WebAssembly nodes that exist on the new cluster; none left
// selects every node with containerd.
func wasmOnNewCluster(ctx context.Context, c *kube.Cluster, nodes []string) (isolation.SandboxParams, error) {
	all, err := isolation.SandboxNodes(ctx, c)
	if err != nil {
		return isolation.SandboxParams{}, err
	}
	var keep []string
	for _, n := range all {
		if slices.Contains(nodes, n.Name) {
			keep = append(keep, n.Name)
		}
	}
	return isolation.SandboxParams{Runtime: store.RuntimeWasm, Nodes: keep}, nil
}
