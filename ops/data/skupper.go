package data

import (
	"context"
	"fmt"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// Skupper v2 (skupperproject/skupper 2.x) carries the private database connections of
// bindings. The cluster's operators install it; the console only looks for its CRDs and
// its controller, and creates the Site runr in the project namespace.

// KindSkupperSite is the job that creates the Skupper site.
const KindSkupperSite = "skupper-site"

// Skupper names: the Site CRD (skupper.io/v2alpha1), the controller's Deployment and its
// pods' label (Skupper 2.2.1's scripts/skupper-deployment-generator.sh, the release YAML
// and the chart: a Deployment skupper-controller without labels of its own, its pod
// template labelled application=skupper-controller) and RunR's site.
const (
	SkupperSiteCRD        = "sites.skupper.io"
	SkupperSiteVersion    = "v2alpha1"
	SkupperController     = "skupper-controller"
	SkupperControllerPods = "application=skupper-controller"
	SkupperSiteName       = "runr"
	skupperControllerName = "controller"
)

var gvkSkupperSite = schema.GroupVersionKind{Group: "skupper.io", Version: SkupperSiteVersion, Kind: "Site"}

// SkupperReport is what a cluster runs of Skupper v2 and the region's site.
type SkupperReport struct {
	// Installed is set when the Site CRD serves v2alpha1 and a controller runs.
	Installed  bool `json:"installed"`
	CRDs       bool `json:"crds"`
	Controller bool `json:"controller"`
	// ControllerNamespace and Version are the controller's (the tag of its image).
	ControllerNamespace string `json:"controller_namespace,omitempty"`
	Version             string `json:"version,omitempty"`
	// Missing says what is missing, for a refusal.
	Missing []string          `json:"missing,omitempty"`
	Site    store.SkupperSite `json:"site"`
}

// SkupperOn reads whether a cluster runs Skupper v2: its Site CRD and an available
// controller Deployment, with the controller's version.
func SkupperOn(ctx context.Context, c *kube.Cluster) (SkupperReport, error) {
	var rep SkupperReport
	crd, err := c.APIExt.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, SkupperSiteCRD, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return rep, fmt.Errorf("read CRD %s: %w", SkupperSiteCRD, err)
	default:
		established := false
		for _, cd := range crd.Status.Conditions {
			established = established || cd.Type == apiextv1.Established && cd.Status == apiextv1.ConditionTrue
		}
		for _, v := range crd.Spec.Versions {
			rep.CRDs = rep.CRDs || established && v.Name == SkupperSiteVersion && v.Served
		}
	}
	// Upstream's Deployment has no labels: it is found by its name, in any namespace
	// (cluster or namespace scope), and must run the controller's pods.
	ds, err := c.Clientset.AppsV1().Deployments("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + SkupperController})
	if err != nil {
		return rep, fmt.Errorf("list Skupper controllers: %w", err)
	}
	for _, d := range ds.Items {
		if d.Spec.Template.Labels["application"] != SkupperController {
			continue
		}
		if ok, _ := kube.DeploymentReady(&d); !ok {
			continue
		}
		rep.Controller, rep.ControllerNamespace = true, d.Namespace
		for _, ctr := range d.Spec.Template.Spec.Containers {
			if ctr.Name == skupperControllerName || rep.Version == "" {
				rep.Version = imageTag(ctr.Image)
			}
		}
	}
	if !rep.CRDs {
		rep.Missing = append(rep.Missing, "the CRD "+SkupperSiteCRD+" (serving "+SkupperSiteVersion+")")
	}
	if !rep.Controller {
		rep.Missing = append(rep.Missing, "an available Skupper controller (a Deployment "+SkupperController+" whose pods are labelled "+SkupperControllerPods+")")
	}
	rep.Installed = rep.CRDs && rep.Controller
	return rep, nil
}

// imageTag is an image reference's tag ("" without one).
func imageTag(image string) string {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return strings.SplitN(image[i+1:], "@", 2)[0]
	}
	return ""
}

// RegionSkupper reads the region's cluster for Skupper v2, with the region's site.
func (s *Service) RegionSkupper(ctx context.Context, r *store.Region) (SkupperReport, error) {
	c, err := s.RegionCluster(r)
	if err != nil {
		return SkupperReport{}, err
	}
	rep, err := SkupperOn(ctx, c)
	rep.Site = r.Skupper.V
	if err != nil {
		return rep, &problem.Unreachable{Region: r.Name, Err: err}
	}
	return rep, nil
}

// CreateSkupperSite queues the Site runr in the project namespace; it is refused while
// the cluster does not run Skupper v2 (the console never installs it).
func (s *Service) CreateSkupperSite(ctx context.Context, actor kit.Actor, r *store.Region) (*store.Job, error) {
	rep, err := s.RegionSkupper(ctx, r)
	if err != nil {
		return nil, err
	}
	if !rep.Installed {
		return nil, &problem.Refused{Reason: "The cluster does not run Skupper v2: it lacks " + strings.Join(rep.Missing, " and ") + ". Its operators install Skupper; RunR does not."}
	}
	if b, err := s.Busy(ctx, r.ID, KindSkupperSite); err != nil || b {
		if err == nil {
			err = &problem.Refused{Reason: "The Skupper site of this region is being created; wait for that job to finish."}
		}
		return nil, err
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindSkupperSite, Title: "Create the Skupper site of " + r.Name,
		Subject: r.ID, CreatedBy: actor.Email})
}

func (s *Service) registerSkupperKinds() {
	s.Engine.Register(&engine.Kind{Name: KindSkupperSite,
		Plan: func(*engine.JobContext) ([]engine.Step, error) {
			return []engine.Step{s.RegionStep("site", "Create the Site "+SkupperSiteName, s.SkupperSite)}, nil
		},
		Finished: func(ctx context.Context, jc *engine.JobContext, err error) {
			if err != nil {
				s.Record(s.Store.SetRegionSkupper(ctx, jc.Job.Region(), store.SkupperSite{Status: store.ComponentError, Message: err.Error()}))
			}
		}})
}

// SkupperSite creates the Site runr in the project namespace and waits for Skupper's
// controller to report it ready.
func (s *Service) SkupperSite(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	rep, err := SkupperOn(ctx, c)
	if err != nil {
		return err
	}
	if !rep.Installed {
		return fmt.Errorf("the cluster does not run Skupper v2: it lacks %s", strings.Join(rep.Missing, " and "))
	}
	if err := s.Store.SetRegionSkupper(ctx, r.ID, store.SkupperSite{Status: store.ComponentInstalling}); err != nil {
		return err
	}
	ns := r.Name
	if _, err := kit.EnsureNamespace(ctx, jc, c, ns, map[string]string{"runr.dev/region": r.Name}); err != nil {
		return err
	}
	if _, err := c.ApplyObject(ctx, map[string]any{"apiVersion": gvkSkupperSite.GroupVersion().String(), "kind": "Site",
		"metadata": map[string]any{"name": SkupperSiteName, "namespace": ns, "labels": kit.ToAnyMap(kit.ManagedLabels(nil))}, "spec": map[string]any{}}); err != nil {
		return err
	}
	if err := jc.Wait(ctx, "Site "+ns+"/"+SkupperSiteName+" to be ready", engine.WaitOpts{Hint: "kubectl get site -n " + ns + " " + SkupperSiteName + " -o yaml; the controller runs in " + rep.ControllerNamespace},
		skupperSiteReady(c, ns)); err != nil {
		return err
	}
	jc.Note("Skupper site %s is ready in %s (controller %s in %s)", SkupperSiteName, ns, kit.OrV(rep.Version, "of unknown version"), rep.ControllerNamespace)
	return s.Store.SetRegionSkupper(ctx, r.ID, store.SkupperSite{Status: store.ComponentReady})
}

// skupperSiteReady holds once the Site's status is Ready (Skupper's status.status and
// its Ready condition).
func skupperSiteReady(c *kube.Cluster, ns string) kube.Cond {
	return c.ResourceJudged(gvkSkupperSite, ns, SkupperSiteName, func(o *unstructured.Unstructured) (bool, string, error) {
		st, _, _ := unstructured.NestedString(o.Object, "status", "status")
		msg, _, _ := unstructured.NestedString(o.Object, "status", "message")
		ready, cond := kube.ReadyCondition(o)
		return st == "Ready" && ready, kit.OrV(msg, kit.OrV(st, cond)), nil
	})
}
