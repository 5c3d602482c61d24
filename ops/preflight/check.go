package preflight

import (
	"context"
	"fmt"
	"strings"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	opsnodes "runr.dev/console/ops/nodes"
	"runr.dev/console/store"
)

// StorageClassInfo summarises a StorageClass.
type StorageClassInfo struct {
	Name        string `json:"name"`
	Provisioner string `json:"provisioner"`
	Default     bool   `json:"default"`
	// Provisioning says whether the class makes volumes, Evidence why (provisioning).
	Provisioning Provisioning `json:"provisioning"`
	Evidence     string       `json:"provisioning_evidence"`
}

// Result is what step 1 found out about a cluster. Nothing is created by a check.
type Result struct {
	OK             bool               `json:"ok"`
	Items          []kit.CheckItem    `json:"checks"`
	Server         string             `json:"server"`
	Version        string             `json:"kubernetes_version"`
	Nodes          []kit.NodeInfo     `json:"nodes"`
	StorageClasses []StorageClassInfo `json:"storage_classes"`
	// Kubeconfig is the kubeconfig to store: rewritten when the local-cluster rewrite applied.
	Kubeconfig []byte `json:"-"`
	Rewritten  bool   `json:"rewritten"`
}

// Item returns the checklist line of a key.
func (r *Result) Item(key string) *kit.CheckItem {
	for i := range r.Items {
		if r.Items[i].Key == key {
			return &r.Items[i]
		}
	}
	return nil
}

// FirstFailure returns the first failing line ("" when all pass).
func (r *Result) FirstFailure() string {
	for _, it := range r.Items {
		if it.Status == kit.CheckFail {
			return it.Title + ": " + it.Evidence
		}
	}
	return ""
}

func (r *Result) add(key, title string, status kit.CheckStatus, evidence string, details ...string) {
	r.Items = append(r.Items, kit.CheckItem{Key: key, Title: title, Status: status, Evidence: evidence, Details: details})
	if status == kit.CheckFail {
		r.OK = false
	}
}

// Check connects with a kubeconfig and checks what step 1 of the wizard needs:
// the API answers, the version is new enough, the nodes, the StorageClasses, the
// rights, and that no namespace of the region's name exists. allowNamespace lets a
// namespace that the console's own setup created pass (a retried setup).
func (s *Service) Check(ctx context.Context, name string, raw []byte, allowNamespace func(*corev1.Namespace) bool) (*Result, error) {
	return s.CheckWith(ctx, name, raw, allowNamespace, nil)
}

// CheckWith is Check through the cluster access c of the same kubeconfig when
// a job has one already (nil builds one for the check).
func (s *Service) CheckWith(ctx context.Context, name string, raw []byte, allowNamespace func(*corev1.Namespace) bool, c *kube.Cluster) (*Result, error) {
	res := &Result{OK: true}
	kc, err := kube.ParseKubeconfig(raw)
	if err != nil {
		res.add("kubeconfig", "Kubeconfig", kit.CheckFail, err.Error())
		return res, nil
	}
	kc.AllowLoopback = s.Cfg.AllowLoopbackClusters
	res.add("kubeconfig", "Kubeconfig", kit.CheckPass, fmt.Sprintf("context %s, server %s, %s authentication", kc.Context, kc.Server, kc.Auth))
	res.Server = kc.Server
	if kc.Insecure {
		res.add("tls", "TLS verification", kit.CheckWarn, "the kubeconfig sets insecure-skip-tls-verify: the console cannot tell the API server from an impostor; embed certificate-authority-data instead")
	}

	c, v, took, err := s.connect(ctx, kc, c)
	tried := ""
	if err != nil && kc.IsLocal() && s.Cfg.LocalClusterHost != "" {
		// A console in a container next to a local cluster: try the host's address
		// (only when RUNR_LOCAL_CLUSTER_HOST is set; TLS is verified as configured).
		// A rewrite to the same address would ask the same server again (and a hanging one
		// would take twice the 10 s the check promises).
		if rk, rerr := kc.WithHost(s.Cfg.LocalClusterHost); rerr == nil && rk.Server != kc.Server {
			if c2, v2, took2, err2 := s.connect(ctx, rk, nil); err2 == nil {
				c, v, took, err = c2, v2, took2, nil
				kc = rk
				res.Rewritten = true
				res.Server = rk.Server
			} else {
				tried = fmt.Sprintf("; also tried %s: %s", rk.Server, kube.Evidence(err2))
			}
		}
	}
	if err != nil {
		res.add("api", "The API answers", kit.CheckFail, kube.ExplainConnect(kc.Server, err)+tried)
		return res, nil
	}
	res.Kubeconfig = kc.Raw
	ev := fmt.Sprintf("answered in %d ms at %s", took.Milliseconds(), res.Server)
	if res.Rewritten {
		ev += fmt.Sprintf(" (rewritten from a local address to %s, RUNR_LOCAL_CLUSTER_HOST)", s.Cfg.LocalClusterHost)
	}
	res.add("api", "The API answers", kit.CheckPass, ev)
	res.Version = v.GitVersion
	if m := kube.Minor(v); m < s.Cfg.MinK8sMinor {
		res.add("version", "Kubernetes version", kit.CheckFail, fmt.Sprintf("%s is older than the minimum 1.%d: upgrade the cluster first", v.GitVersion, s.Cfg.MinK8sMinor))
	} else {
		res.add("version", "Kubernetes version", kit.CheckPass, fmt.Sprintf("%s (minimum 1.%d)", v.GitVersion, s.Cfg.MinK8sMinor))
	}

	if err := s.checkNeighbours(ctx, name, res); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	s.checkRights(cctx, c, res)
	s.checkNodes(cctx, c, res)
	s.checkStorage(cctx, c, res)
	s.checkPodSecurity(cctx, c, res)
	if name != "" {
		ns, err := c.Clientset.CoreV1().Namespaces().Get(cctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			res.add("namespace", "Namespace "+name, kit.CheckPass, "does not exist yet; the region's projects will run in it")
		case err != nil:
			res.add("namespace", "Namespace "+name, kit.CheckFail, "could not be read: "+kube.Evidence(err))
		case allowNamespace != nil && allowNamespace(ns):
			res.add("namespace", "Namespace "+name, kit.CheckPass, "exists, created by this region's setup")
		default:
			res.add("namespace", "Namespace "+name, kit.CheckFail, fmt.Sprintf("namespace %s already exists on the cluster: choose another region name, or delete the namespace", name))
		}
	}
	return res, nil
}

// connect asks the cluster for its version within 10 s.
func (s *Service) connect(ctx context.Context, kc *kube.Kubeconfig, c *kube.Cluster) (*kube.Cluster, *version.Info, time.Duration, error) {
	if c == nil {
		var err error
		if c, err = s.NewCluster(kc); err != nil {
			return nil, nil, 0, err
		}
		c.REST.Timeout = 10 * time.Second
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	v, err := c.ServerVersion(vctx)
	if err != nil {
		return nil, nil, 0, err
	}
	return c, v, time.Since(start), nil
}

// checkNeighbours says which regions (other than name) the cluster hosts already and
// what a new region shares with them: Knative Serving, tracing and the runr-agent are
// the cluster's, and so is an internal registry (one per cluster).
func (s *Service) checkNeighbours(ctx context.Context, name string, res *Result) error {
	rs, err := s.Store.ListRegions(ctx, store.RegionFilter{ClusterKey: kube.ClusterKey(res.Server)}, false)
	if err != nil {
		return fmt.Errorf("regions of cluster %s: %w", res.Server, err)
	}
	var names, dataOf []string
	registryOf := ""
	for _, r := range rs {
		if r.Name == name {
			continue
		}
		names = append(names, r.Name)
		if r.RegistryMode == store.RegistryInternal {
			registryOf = r.Name
		}
		for _, svc := range store.DataServiceNames {
			if r.DataServices.V.Service(svc).State() != store.ComponentNotInstalled {
				dataOf = append(dataOf, svc+" ("+r.Name+"'s)")
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	ev := "this cluster already hosts region " + strings.Join(names, ", ") + ": its Knative Serving, tracing and runr-agent are shared with the new region"
	if registryOf != "" {
		ev += "; its internal registry is " + registryOf + "'s (a cluster holds one): choose an external registry or none in step 2"
	}
	if len(dataOf) > 0 {
		ev += "; the data services " + strings.Join(dataOf, ", ") + " are one per cluster and stay their region's"
	}
	res.add("neighbours", "Regions on this cluster", kit.CheckWarn, ev)
	return nil
}

func (s *Service) checkRights(ctx context.Context, c *kube.Cluster, res *Result) {
	sar := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*"}}}
	out, err := c.Clientset.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	switch {
	case err != nil:
		res.add("rights", "Cluster-admin rights", kit.CheckWarn, "could not be checked: "+kube.Evidence(err))
	case out.Status.Allowed:
		res.add("rights", "Cluster-admin rights", kit.CheckPass, "the kubeconfig's user may do everything the installs need")
	default:
		res.add("rights", "Cluster-admin rights", kit.CheckFail, "the kubeconfig's user is not cluster-admin: the installs create namespaces, CRDs, ClusterRoles and DaemonSets; bind the user to cluster-admin")
	}
}

func (s *Service) checkNodes(ctx context.Context, c *kube.Cluster, res *Result) {
	nodes, err := c.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		res.add("nodes", "Nodes", kit.CheckFail, "could not be listed: "+kube.Evidence(err))
		return
	}
	ready := 0
	var details []string
	for _, n := range nodes.Items {
		ni := kit.NodeSummary(&n)
		ni.BelowFloor = opsnodes.FloorFailures(&n, s.Cfg.MinK8sMinor)
		res.Nodes = append(res.Nodes, ni)
		if ni.Ready {
			ready++
		}
		st := "Ready"
		if !ni.Ready {
			st = "NotReady"
		}
		details = append(details, fmt.Sprintf("%s: %s, %s CPU, %s memory, %s", ni.Name, strings.Join(ni.Roles, "+"), ni.CPU, ni.Memory, st))
	}
	switch {
	case len(nodes.Items) == 0:
		res.add("nodes", "Nodes", kit.CheckFail, "the cluster has no nodes", details...)
	case ready == 0:
		res.add("nodes", "Nodes", kit.CheckFail, fmt.Sprintf("none of the %d nodes is Ready", len(nodes.Items)), details...)
	case ready < len(nodes.Items):
		res.add("nodes", "Nodes", kit.CheckWarn, fmt.Sprintf("%d of %d nodes are Ready", ready, len(nodes.Items)), details...)
	default:
		res.add("nodes", "Nodes", kit.CheckPass, fmt.Sprintf("%d nodes, all Ready", ready), details...)
	}
}

func (s *Service) checkStorage(ctx context.Context, c *kube.Cluster, res *Result) {
	scs, err := c.Clientset.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		res.add("storage", "StorageClasses", kit.CheckWarn, "could not be listed: "+kube.Evidence(err))
		return
	}
	ev, evErr := readVolumeEvidence(ctx, c)
	def := ""
	var names []string
	for _, sc := range scs.Items {
		isDef := kube.IsDefaultStorageClass(&sc)
		info := StorageClassInfo{Name: sc.Name, Provisioner: sc.Provisioner, Default: isDef}
		if evErr != nil {
			info.Provisioning, info.Evidence = ProvisioningUnknown, "could not be told: "+kube.Evidence(evErr)
		} else {
			info.Provisioning, info.Evidence = provisioning(sc, ev, time.Now())
		}
		res.StorageClasses = append(res.StorageClasses, info)
		n := sc.Name
		if isDef {
			def = sc.Name
			n += " (default)"
		}
		names = append(names, n+": "+info.Evidence)
	}
	switch {
	case len(scs.Items) == 0:
		res.add("storage", "StorageClasses", kit.CheckWarn, "none: an internal registry needs S3 then, or create a StorageClass")
	case def == "":
		res.add("storage", "StorageClasses", kit.CheckWarn, "no default StorageClass: name a class for every volume RunR requests (the internal registry's, the data services', the GPU model storage's); Prometheus, Loki and Tempo keep their data in emptyDir volumes, lost when their pods move, unless the region's Monitoring settings name a class", names...)
	default:
		res.add("storage", "StorageClasses", kit.CheckPass, fmt.Sprintf("%d, default %s", len(scs.Items), def), names...)
	}
}

// Service checks clusters before a region goes on them: step 1 of the wizard, the
// connect step of a setup and the target of a move.
type Service struct{ *kit.Kit }

// New is the cluster checks on the kit.
func New(k *kit.Kit) *Service { return &Service{Kit: k} }
