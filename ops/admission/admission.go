package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/engine"
	"runr.dev/console/helm"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// Job kinds of the admission policy.
const (
	KindAdmissionApply  = "supply-chain-admission"
	KindAdmissionRemove = "supply-chain-admission-remove"
)

// AdmissionKinds are the job kinds of the Supply chain tab.
var AdmissionKinds = []string{KindAdmissionApply, KindAdmissionRemove}

func (s *Service) registerKinds() {
	failed := func(ctx context.Context, jc *engine.JobContext, err error) {
		if err == nil {
			return
		}
		if r, rerr := s.JobRegion(ctx, jc); rerr == nil {
			st := r.SupplyChain.V.State
			st.Status, st.Message = store.ComponentError, err.Error()
			s.Record(s.Store.SetAdmissionState(ctx, r.ID, st))
		}
	}
	s.Engine.Register(&engine.Kind{Name: KindAdmissionApply, Finished: failed, Plan: func(*engine.JobContext) ([]engine.Step, error) {
		return s.admissionApplySteps(), nil
	}})
	s.Engine.Register(&engine.Kind{Name: KindAdmissionRemove, Finished: failed, Plan: func(*engine.JobContext) ([]engine.Step, error) {
		return s.admissionRemoveSteps(), nil
	}})
}

// admissionApplySteps install the policy-controller (or use the one the cluster runs)
// and apply the system images policy and the region's policy.
func (s *Service) admissionApplySteps() []engine.Step {
	return []engine.Step{
		s.RegionStep("start", "Record the change", func(ctx context.Context, _ *engine.JobContext, r *store.Region, _ *kube.Cluster) error {
			st := r.SupplyChain.V.State
			st.Status, st.Message = store.ComponentInstalling, ""
			return s.Store.SetAdmissionState(ctx, r.ID, st)
		}),
		s.RegionStep("controller", "Install Sigstore's policy-controller", s.installPolicyController),
		s.RegionStep("policies", "Apply the admission policies", s.applyPolicies),
	}
}

// policyControllerOwner names the Helm release that installed the ClusterImagePolicy
// CRD ("" when there is none, or no Helm release installed it).
func policyControllerOwner(ctx context.Context, c *kube.Cluster) (string, bool, error) {
	crd, err := c.APIExt.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, CIPCRD, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read CRD %s: %w", CIPCRD, err)
	}
	a := crd.GetAnnotations()
	return a["meta.helm.sh/release-namespace"] + "/" + a["meta.helm.sh/release-name"], true, nil
}

// installPolicyController installs the chart into cosign-system, or keeps a
// policy-controller someone else installed (its CRD belongs to another release).
func (s *Service) installPolicyController(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	owner, exists, err := policyControllerOwner(ctx, c)
	if err != nil {
		return err
	}
	ours := CosignNamespace + "/" + PolicyControllerRelease
	if exists && owner != ours {
		jc.Note("The cluster runs a policy-controller already (CRD %s of %s): the console uses it", CIPCRD, strings.Trim(owner, "/"))
		st := r.SupplyChain.V.State
		st.Adopted = true
		return s.Store.SetAdmissionState(ctx, r.ID, st)
	}
	if _, err := kit.EnsureNamespace(ctx, jc, c, CosignNamespace, kit.ManagedLabels(nil)); err != nil {
		return err
	}
	rel, err := s.HelmApply(ctx, jc, c, kit.Release{Namespace: CosignNamespace, Name: PolicyControllerRelease, Chart: ChartPolicyController, Values: PolicyControllerValues()})
	if err != nil {
		return err
	}
	if err := kit.WaitRelease(ctx, jc, c, rel, engine.WaitOpts{Hint: "read the webhook's logs in " + CosignNamespace}); err != nil {
		return err
	}
	if err := jc.Wait(ctx, "CRD "+CIPCRD+" to be established", engine.WaitOpts{}, c.CRDEstablished(CIPCRD)); err != nil {
		return err
	}
	jc.Note("policy-controller %s (chart %s) runs in %s", rel.Chart.Metadata.AppVersion, ChartPolicyController.Version, CosignNamespace)
	st := r.SupplyChain.V.State
	st.Adopted = false
	return s.Store.SetAdmissionState(ctx, r.ID, st)
}

// applyWhenWebhooksAnswer applies an object, reporting not done while the API server
// cannot reach a webhook it needs (an internal error, unavailable, a timeout) and failing
// on any other error.
func applyWhenWebhooksAnswer(c *kube.Cluster, o map[string]any) engine.Cond {
	return func(ctx context.Context) (bool, string, error) {
		_, err := c.ApplyObject(ctx, o)
		switch {
		case err == nil:
			return true, "", nil
		case apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
			return false, err.Error(), nil
		}
		return false, "", err
	}
}

// applyPolicies applies the system images policy and the region's policy, and opts the
// project namespace into the policy-controller's webhooks.
func (s *Service) applyPolicies(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	sc := r.SupplyChain.V
	for _, o := range []map[string]any{SystemImagesPolicy(), RegionPolicy(r.Name, sc)} {
		// Right after the webhook's Deployment is available, its CA may not be injected in
		// the CRD's conversion webhook yet: the API server answers 500 (x509 unknown
		// authority) until it is. Such answers are waited out; a refusal of the object is not.
		err := jc.Wait(ctx, "the policy-controller's webhooks to accept ClusterImagePolicy "+o["metadata"].(map[string]any)["name"].(string),
			engine.WaitOpts{Hint: "kubectl get crd " + CIPCRD + " -o jsonpath='{.spec.conversion}' and the webhook's logs in " + CosignNamespace},
			applyWhenWebhooksAnswer(c, o))
		if err != nil {
			return err
		}
	}
	labels := map[string]string{"runr.dev/region": r.Name, PolicyIncludeLabel: "true"}
	if _, err := kit.EnsureNamespace(ctx, jc, c, r.Name, labels); err != nil {
		return err
	}
	msg := fmt.Sprintf("%s mode, %d key(s), images %s", sc.Admission.Mode, len(sc.PublicKeys), strings.Join(sc.Admission.Images, ", "))
	jc.Note("ClusterImagePolicies %s and %s apply to namespace %s (%s); RunR's images pass", SystemPolicyName, RegionPolicyName(r.Name), r.Name, msg)
	st := r.SupplyChain.V.State
	st.Status, st.Message = store.ComponentReady, msg
	return s.Store.SetAdmissionState(ctx, r.ID, st)
}

// admissionRemoveSteps delete the region's policy; the policy-controller goes too when
// no other ClusterImagePolicy is left (its uninstall deletes the CRD with every policy).
func (s *Service) admissionRemoveSteps() []engine.Step {
	return []engine.Step{
		s.RegionStep("policy", "Remove the region's policy", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			st := r.SupplyChain.V.State
			st.Status, st.Message = store.ComponentRemoving, ""
			if err := s.Store.SetAdmissionState(ctx, r.ID, st); err != nil {
				return err
			}
			if err := c.Delete(ctx, gvkCIP, "", RegionPolicyName(r.Name)); err != nil {
				return err
			}
			err := c.MergePatch(ctx, kube.GVKNamespace, "", r.Name, map[string]any{"metadata": map[string]any{"labels": map[string]any{PolicyIncludeLabel: nil}}})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			jc.Note("ClusterImagePolicy %s is deleted; namespace %s is no longer checked", RegionPolicyName(r.Name), r.Name)
			return nil
		}),
		s.RegionStep("controller", "Remove the policy-controller when nothing else uses it", s.removePolicyController),
		s.RegionStep("record", "Record", func(ctx context.Context, jc *engine.JobContext, r *store.Region, _ *kube.Cluster) error {
			return s.Store.SetAdmissionState(ctx, r.ID, store.AdmissionState{Status: store.ComponentNotInstalled})
		}),
	}
}

// otherPolicies lists the ClusterImagePolicies other than the system images policy.
func otherPolicies(ctx context.Context, c *kube.Cluster) ([]string, error) {
	gvr := schema.GroupVersionResource{Group: gvkCIP.Group, Version: gvkCIP.Version, Resource: "clusterimagepolicies"}
	l, err := c.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the ClusterImagePolicies: %w", err)
	}
	var out []string
	for _, o := range l.Items {
		if o.GetName() != SystemPolicyName {
			out = append(out, o.GetName())
		}
	}
	slices.Sort(out)
	return out, nil
}

// removePolicyController uninstalls the console's policy-controller release once no
// ClusterImagePolicy but the system images policy is left.
func (s *Service) removePolicyController(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	others, err := otherPolicies(ctx, c)
	if err != nil {
		return err
	}
	if len(others) > 0 {
		jc.Note("The policy-controller stays: other ClusterImagePolicies use it (%s)", strings.Join(others, ", "))
		return engine.ErrSkip
	}
	rel, err := helm.Status(c, CosignNamespace, PolicyControllerRelease)
	if err != nil {
		return err
	}
	if rel == nil {
		jc.Note("The policy-controller is not the console's release: it stays")
		return c.Delete(ctx, gvkCIP, "", SystemPolicyName)
	}
	if err := c.Delete(ctx, gvkCIP, "", SystemPolicyName); err != nil {
		return err
	}
	if err := s.HelmUninstall(ctx, jc, c, CosignNamespace, PolicyControllerRelease); err != nil {
		return err
	}
	if err := jc.Wait(ctx, "CRD "+CIPCRD+" to be deleted", engine.WaitOpts{}, crdGone(c, CIPCRD)); err != nil {
		return err
	}
	jc.Note("policy-controller is removed; namespace %s stays (remove it with kubectl once nothing else lives there)", CosignNamespace)
	return nil
}

// crdGone waits until a CRD no longer exists.
func crdGone(c *kube.Cluster, name string) kube.Cond {
	return func(ctx context.Context) (bool, string, error) {
		_, err := c.APIExt.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "still there", err
	}
}

// MoveAdmission applies the admission policy on the new cluster of a move when the
// region wants it (a part of the step "extras" whose failure the move tolerates).
func (s *Service) MoveAdmission(ctx context.Context, jc *engine.JobContext, r *store.Region) error {
	if !r.SupplyChain.V.Admission.Enabled {
		return nil
	}
	err := kit.RunInline(ctx, jc, s.admissionApplySteps())
	if err != nil {
		s.Record(s.Store.SetAdmissionState(ctx, r.ID, store.AdmissionState{Status: store.ComponentError, Message: err.Error()}))
	}
	return err
}
