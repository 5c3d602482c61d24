package isolation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

func mustJSON(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

// PodsUsing lists the pods (namespace/name) that run with one of the RuntimeClasses.
func PodsUsing(ctx context.Context, c *kube.Cluster, classes []string) ([]string, error) {
	pods, err := c.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the pods: %w", err)
	}
	var out []string
	for _, p := range pods.Items {
		if p.Spec.RuntimeClassName != nil && slices.Contains(classes, *p.Spec.RuntimeClassName) && p.DeletionTimestamp == nil {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	return out, nil
}

func (s *Service) sandboxUninstallSteps(p SandboxParams) []engine.Step {
	classes := s.RegionStep("classes", "Map its workloads back to runc", s.mapBackToRunc(p))
	if p.SharedWith != "" {
		return []engine.Step{
			s.RegionStep("shared", "Leave the runtime to region "+p.SharedWith, func(ctx context.Context, jc *engine.JobContext, r *store.Region, _ *kube.Cluster) error {
				jc.Note("%s stays on the cluster: region %s uses it too", runtimeLabels[p.Runtime], p.SharedWith)
				return nil
			}),
			classes,
		}
	}
	return []engine.Step{
		s.RegionStep("unused", "Check that no pod uses the runtime", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			used, err := PodsUsing(ctx, c, r.Isolation.V.Runtime(p.Runtime).Classes)
			if err != nil {
				return err
			}
			if len(used) > 0 {
				return fmt.Errorf("pods still use it: %s", strings.Join(used, ", "))
			}
			rt := r.Isolation.V.Runtime(p.Runtime)
			rt.Status, rt.Message = store.ComponentRemoving, ""
			return s.Store.SetSandboxRuntime(ctx, r.ID, p.Runtime, rt)
		}),
		s.RegionStep("remove", "Remove the runtime from the nodes", s.removeSandbox(p)),
		classes,
	}
}

// mapBackToRunc is the last step of a removal: the workload kinds that used the runtime's
// RuntimeClasses run with runc again, and the region records the runtime as gone.
func (s *Service) mapBackToRunc(p SandboxParams) func(ctx context.Context, jc *engine.JobContext, r *store.Region, _ *kube.Cluster) error {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, _ *kube.Cluster) error {
		gone := r.Isolation.V.Runtime(p.Runtime).Classes
		classes := map[string]string{}
		var moved []string
		for kind, class := range r.Isolation.V.Classes {
			if slices.Contains(gone, class) {
				moved = append(moved, kind)
				continue
			}
			classes[kind] = class
		}
		if err := s.Store.SetWorkloadClasses(ctx, r.ID, classes); err != nil {
			return err
		}
		if err := s.Store.SetSandboxRuntime(ctx, r.ID, p.Runtime, store.SandboxRuntime{Status: store.ComponentNotInstalled}); err != nil {
			return err
		}
		jc.Note("Removed; the workload kinds that used it run with runc again: %s", kit.OrNoneList(moved))
		return nil
	}
}

// removeSandbox takes a runtime off the cluster: kata-deploy's uninstall (its cleanup
// restarts the container runtime of each node), gVisor's installer and RuntimeClass, or
// the WebAssembly shims (their uninstaller Jobs) and runtime-class-manager.
func (s *Service) removeSandbox(p SandboxParams) func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		nodes := r.Isolation.V.Runtime(p.Runtime).Nodes
		switch p.Runtime {
		case store.RuntimeKata:
			return s.removeKata(ctx, jc, c, nodes)
		case store.RuntimeGVisor:
			for _, o := range []struct {
				gvk      schema.GroupVersionKind
				ns, name string
			}{{gvkDaemonSet, SandboxNamespace, GVisorInstaller}, {gvkRuntimeClass, "", GVisorClass}} {
				if err := c.Delete(ctx, o.gvk, o.ns, o.name); err != nil {
					return err
				}
			}
			jc.Logf("runsc stays installed on the nodes, unused: no RuntimeClass names it any more")
			return unlabelNodes(ctx, c, nodes, GVisorLabel, "runr.dev/gvisor-eligible")
		default:
			for _, sh := range WasmShims {
				if err := c.Delete(ctx, gvkShim, "", sh.Name); err != nil {
					return err
				}
				if err := jc.Wait(ctx, "shim "+sh.Name+" to be removed from "+kit.OrNoneList(nodes), engine.WaitOpts{}, nodesUnlabelled(c, nodes, sh.Name)); err != nil {
					return err
				}
				// runtime-class-manager owns the shim's RuntimeClass; it goes with the Shim
				// by garbage collection, which may lag: deleted here, it is gone now.
				if err := c.Delete(ctx, gvkRuntimeClass, "", sh.RuntimeClass); err != nil {
					return err
				}
			}
			if err := s.HelmUninstall(ctx, jc, c, SandboxNamespace, WasmRelease); err != nil {
				return err
			}
			return unlabelNodes(ctx, c, nodes, WasmLabel)
		}
	}
}

// kataDaemonSet is kata-deploy's DaemonSet (the chart's name, whatever the release).
const kataDaemonSet = "kata-deploy"

// removeKata takes kata-deploy off the cluster. Its DaemonSet goes first, and the job
// waits for the pods' cleanup (on SIGTERM, with their DaemonSet gone) to take
// katacontainers.io/kata-runtime off their nodes, then uninstalls the release: helm
// uninstall alone runs kata-deploy 3.32.0's post-delete Job kata-deploy-rb-cleanup, whose
// `kubectl get pod` is forbidden (its role grants delete only) and counts no pod, so it
// deletes the ServiceAccount and RBAC the pods' cleanup needs at once and the label stays.
// A label still there after the wait is removed here, and the log says so.
func (s *Service) removeKata(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, recorded []string) error {
	nodes, err := kataNodes(ctx, c, recorded)
	if err != nil {
		return err
	}
	// The nodes whose pod cleans up; a label elsewhere has no pod to take it off.
	pods, err := c.Clientset.CoreV1().Pods(SandboxNamespace).List(ctx, metav1.ListOptions{LabelSelector: "name=" + kataDaemonSet})
	if err != nil {
		return fmt.Errorf("list kata-deploy's pods: %w", err)
	}
	var cleaning []string
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && slices.Contains(nodes, p.Spec.NodeName) && !slices.Contains(cleaning, p.Spec.NodeName) {
			cleaning = append(cleaning, p.Spec.NodeName)
		}
	}
	sort.Strings(cleaning)
	if err := c.Delete(ctx, gvkDaemonSet, SandboxNamespace, kataDaemonSet); err != nil {
		return err
	}
	var timedOut *engine.WaitTimeoutError
	err = jc.Wait(ctx, "kata-deploy's cleanup to take "+KataRuntimeLabel+" off "+kit.OrNoneList(cleaning), engine.WaitOpts{},
		nodesUnlabelled(c, cleaning, KataRuntimeLabel))
	if err != nil && !errors.As(err, &timedOut) {
		return err
	}
	if err := s.HelmUninstall(ctx, jc, c, SandboxNamespace, KataRelease); err != nil {
		return err
	}
	if err := removeKataLeftovers(ctx, jc, c, nodes); err != nil {
		return err
	}
	return unlabelNodes(ctx, c, nodes, KataEligibleLabel)
}

// kataNodes are the nodes Kata was recorded on and those that carry kata-deploy's label.
func kataNodes(ctx context.Context, c *kube.Cluster, recorded []string) ([]string, error) {
	out := append([]string{}, recorded...)
	list, err := c.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: KataRuntimeLabel})
	if err != nil {
		return nil, fmt.Errorf("list the nodes with %s: %w", KataRuntimeLabel, err)
	}
	for _, n := range list.Items {
		if !slices.Contains(out, n.Name) {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// removeKataLeftovers takes kata-deploy's label off the nodes whose cleanup did not, unless
// another kata-deploy DaemonSet remains (the label is then its), and says so in the log.
func removeKataLeftovers(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, nodes []string) error {
	var left []string
	for _, n := range nodes {
		node, err := c.Clientset.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read node %s: %w", n, err)
		}
		if _, ok := node.Labels[KataRuntimeLabel]; ok {
			left = append(left, n)
		}
	}
	if len(left) == 0 {
		return nil
	}
	dss, err := c.Clientset.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list the DaemonSets: %w", err)
	}
	for _, d := range dss.Items {
		if d.DeletionTimestamp == nil && strings.Contains(d.Name, "kata-deploy") {
			jc.Logf("kata-deploy's label stays on %s: DaemonSet %s/%s (another kata-deploy) still runs there", strings.Join(left, ", "), d.Namespace, d.Name)
			return nil
		}
	}
	jc.Logf("kata-deploy's cleanup did not take %s off %s; the console removes it: Kata's files and its container runtime configuration may remain on those nodes (kata-deploy's cleanup had not finished)",
		KataRuntimeLabel, strings.Join(left, ", "))
	return unlabelNodes(ctx, c, left, KataRuntimeLabel)
}

// nodesUnlabelled waits until none of the nodes carries a label.
func nodesUnlabelled(c *kube.Cluster, names []string, label string) kube.Cond {
	return func(ctx context.Context) (bool, string, error) {
		var left []string
		for _, n := range names {
			node, err := c.Clientset.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				continue
			}
			if _, ok := node.Labels[label]; ok {
				left = append(left, n)
			}
		}
		return len(left) == 0, "still on " + strings.Join(left, ", "), nil
	}
}

func unlabelNodes(ctx context.Context, c *kube.Cluster, nodes []string, labels ...string) error {
	for _, n := range nodes {
		for _, l := range labels {
			if err := setNodeLabel(ctx, c, n, l, ""); err != nil {
				return err
			}
		}
	}
	return nil
}
