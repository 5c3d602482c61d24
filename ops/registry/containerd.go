package registry

import (
	"context"
	"fmt"
	"sort"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// KindContainerdRestart restarts containerd node by node (runr registry rolling-restart,
// the spec's registry:rolling-restart): plain containerd reads the config_path the node
// mirror set only after one restart.
const KindContainerdRestart = "containerd-rolling-restart"

// RestartParams names the nodes of a rolling restart, in order.
type RestartParams struct {
	Nodes []string `json:"nodes"`
}

// StartRollingRestart queues the restart of containerd on every node of the region's
// cluster, one node at a time; only the nodes of a ready internal registry have a node
// mirror to read.
func (s *Service) StartRollingRestart(ctx context.Context, actor kit.Actor, r *store.Region) (*store.Job, error) {
	if r.RegistryMode != store.RegistryInternal || r.RegistryStatus != store.ComponentReady {
		return nil, &problem.Refused{Reason: "Only a region with a ready internal registry has a node mirror whose config_path containerd must read."}
	}
	c, err := s.RegionCluster(r)
	if err != nil {
		return nil, err
	}
	nodes, err := c.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, &problem.Unreachable{Region: r.Name, Err: fmt.Errorf("list the nodes: %w", err)}
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	return s.Enqueue(ctx, engine.Request{Kind: KindContainerdRestart, Title: "Restart containerd on the nodes of " + r.Name + ", one at a time",
		Subject: r.ID, Params: RestartParams{Nodes: names}, CreatedBy: actor.Email})
}

func (s *Service) registerContainerdKind() {
	s.Engine.Register(&engine.Kind{Name: KindContainerdRestart, Plan: engine.PlanWith(func(p RestartParams) []engine.Step {
		steps := make([]engine.Step, len(p.Nodes))
		for i, node := range p.Nodes {
			steps[i] = s.RegionStep("node-"+kit.ShortHash(node), "Restart containerd on "+node, func(ctx context.Context, jc *engine.JobContext, _ *store.Region, c *kube.Cluster) error {
				return s.restartContainerd(ctx, jc, c, node)
			})
		}
		return steps
	})})
}

// restartContainerd runs `runr registry restart-containerd` in a privileged pod on the
// node (host PID namespace, the host's / at /host), then waits for the node to be Ready.
// On k3s and rke2 the pod restarts nothing: their containerd reads hosts.toml as it is.
func (s *Service) restartContainerd(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, node string) error {
	if _, err := c.Clientset.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		jc.Note("Node %s is gone", node)
		return engine.ErrSkip
	} else if err != nil {
		return fmt.Errorf("read node %s: %w", node, err)
	}
	name := "runr-containerd-restart-" + kit.ShortHash(node)
	jobs := c.Clientset.BatchV1().Jobs(Namespace)
	bg := metav1.DeletePropagationBackground
	_ = jobs.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if err := jc.Wait(ctx, "the previous restart Job "+name+" to be deleted", engine.WaitOpts{}, func(ctx context.Context) (bool, string, error) {
		_, err := jobs.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), "", nil
	}); err != nil {
		return err
	}
	image, err := s.JobImage(ctx, jc, s.Cfg.AgentImage)
	if err != nil {
		return err
	}
	backoff, ttl, privileged := int32(0), int32(600), true
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: kit.ManagedLabels(map[string]string{"runr.dev/node": node})},
		Spec: batchv1.JobSpec{BackoffLimit: &backoff, TTLSecondsAfterFinished: &ttl, Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{
				NodeName: node, HostPID: true, RestartPolicy: corev1.RestartPolicyNever,
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers: []corev1.Container{{
					Name: "restart", Image: image, Args: []string{"registry", "restart-containerd", "--root", "/host"},
					SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
					VolumeMounts:    []corev1.VolumeMount{{Name: "host", MountPath: "/host"}},
				}},
				Volumes: []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}},
			},
		}},
	}
	if _, err := jobs.Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Job %s/%s: %w", Namespace, name, err)
	}
	if err := jc.Wait(ctx, "containerd on "+node+" to restart (Job "+Namespace+"/"+name+")", engine.WaitOpts{Hint: "read the Job's log: the node may run another container runtime"}, c.JobComplete(Namespace, name)); err != nil {
		return err
	}
	if err := jc.Wait(ctx, "node "+node+" to be Ready again", engine.WaitOpts{}, c.NodeReady(node)); err != nil {
		return err
	}
	if err := jobs.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Job %s/%s: %w", Namespace, name, err)
	}
	jc.Note("containerd on %s reads the node mirror's hosts.toml", node)
	return nil
}
