package testcluster_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"runr.dev/console/ops/admission"
	"runr.dev/console/store"
)

// The policy-controller's facts (release policy-controller in cosign-system), kept beside
// contractFacts and added to it.

const upPolicyController = "policy-controller 0.10.6 (sigstore/helm-charts, tag policy-controller-0.10.6: PC = charts/policy-controller; appVersion 0.13.1)"

func init() { contractFacts = append(contractFacts, policyControllerFacts...) }

// renderedCRD returns a CRD the release renders as one of its objects (templates/).
func renderedCRD(r *rendering, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	m, err := r.rendered()
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	return crd, m.typed("CustomResourceDefinition", name, crd)
}

// pcFullname is the chart's full name: the release name when it holds the chart's name.
func pcFullname(r *rendering) string {
	if strings.Contains(r.vc.Release, "policy-controller") {
		return r.vc.Release
	}
	return r.vc.Release + "-policy-controller"
}

// pcWebhookSelector is the webhook pods' selector.
func pcWebhookSelector(r *rendering) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "policy-controller", "app.kubernetes.io/instance": r.vc.Release,
		"control-plane": pcFullname(r) + "-webhook"}
}

var policyControllerFacts = []fact{
	{id: "pc-numbering", chart: "policy-controller", upstream: upPolicyController, source: "PC/Chart.yaml, PC/values.yaml (webhook.image), PC/templates/_helpers.tpl (policy-controller.image)",
		text: "Chart version 0.10.6, appVersion 0.13.1; the webhook runs ghcr.io/sigstore/policy-controller/policy-controller@sha256:0bcd60be… (webhook.image.version is a digest: repository@version, a tag would give repository:version)",
		check: func(r *rendering) error {
			if r.cv.Version != "0.10.6" || r.cv.AppVersion != "0.13.1" || r.vc.Chart.Version != r.cv.Version {
				return fmt.Errorf("version %s, appVersion %s, pinned %s", r.cv.Version, r.cv.AppVersion, r.vc.Chart.Version)
			}
			m, err := r.rendered()
			if err != nil {
				return err
			}
			pt, err := m.podTemplate("Deployment", pcFullname(r)+"-webhook")
			if err != nil {
				return err
			}
			want := "ghcr.io/sigstore/policy-controller/policy-controller@sha256:0bcd60beb93f4427c29cf3a669743caf58490e98ded4380c33c09f092734a6ab"
			if got := pt.Spec.Containers[0].Image; got != want {
				return fmt.Errorf("image %s, want %s", got, want)
			}
			return nil
		}},
	{id: "pc-workload", chart: "policy-controller", upstream: upPolicyController, source: "PC/templates/webhook/deployment_webhook.yaml, service_webhook.yaml, _helpers.tpl",
		text: "Deployment <fullname>-webhook (policy-controller-webhook for the release policy-controller) of webhook.replicaCount pods selected by app.kubernetes.io/name=policy-controller, app.kubernetes.io/instance=<release>, control-plane=<fullname>-webhook; Service webhook (a fixed name) port webhook.service.port to the container port https (8443)",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			var d appsv1.Deployment
			if err := m.typed("Deployment", pcFullname(r)+"-webhook", &d); err != nil {
				return err
			}
			sel := pcWebhookSelector(r)
			if d.Spec.Selector == nil || !maps.Equal(d.Spec.Selector.MatchLabels, sel) {
				return fmt.Errorf("selector %v, want %v", d.Spec.Selector, sel)
			}
			if err := hasLabels("webhook pods", d.Spec.Template.Labels, sel); err != nil {
				return err
			}
			if want := fmt.Sprint(dig(r.values, "webhook", "replicaCount")); d.Spec.Replicas == nil || fmt.Sprint(*d.Spec.Replicas) != want {
				return fmt.Errorf("replicas %v, want %s", d.Spec.Replicas, want)
			}
			var svc corev1.Service
			if err := m.typed("Service", "webhook", &svc); err != nil {
				return err
			}
			if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort != intstr.FromString("https") || !maps.Equal(svc.Spec.Selector, sel) {
				return fmt.Errorf("Service webhook: ports %+v selector %v", svc.Spec.Ports, svc.Spec.Selector)
			}
			return nil
		}},
	{id: "pc-namespace-optin", chart: "policy-controller", upstream: upPolicyController, source: "PC/templates/webhook/webhook_validating.yaml, webhook_mutating.yaml, _helpers.tpl (policy-controller.webhook.namespaceSelector), values.yaml (webhook.namespaceSelector)",
		text: "The image policy webhooks are a ValidatingWebhookConfiguration and a MutatingWebhookConfiguration named cosign.webhookName (policy.sigstore.dev) that select only the namespaces labelled policy.sigstore.dev/include=true, call Service webhook in the release namespace with webhook.failurePolicy (Fail), and carry no rules in the chart (the running webhook fills them in)",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			want := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: admission.PolicyIncludeLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"true"}}}}
			var v admissionv1.ValidatingWebhookConfiguration
			var mu admissionv1.MutatingWebhookConfiguration
			if err := m.typed("ValidatingWebhookConfiguration", "policy.sigstore.dev", &v); err != nil {
				return err
			}
			if err := m.typed("MutatingWebhookConfiguration", "policy.sigstore.dev", &mu); err != nil {
				return err
			}
			if len(v.Webhooks) != 1 || len(mu.Webhooks) != 1 {
				return errors.New("one webhook each expected")
			}
			for _, w := range []struct {
				sel   *metav1.LabelSelector
				svc   *admissionv1.ServiceReference
				fp    *admissionv1.FailurePolicyType
				rules int
			}{{v.Webhooks[0].NamespaceSelector, v.Webhooks[0].ClientConfig.Service, v.Webhooks[0].FailurePolicy, len(v.Webhooks[0].Rules)},
				{mu.Webhooks[0].NamespaceSelector, mu.Webhooks[0].ClientConfig.Service, mu.Webhooks[0].FailurePolicy, len(mu.Webhooks[0].Rules)}} {
				if fmt.Sprint(w.sel) != fmt.Sprint(want) {
					return fmt.Errorf("namespaceSelector %v, want %v", w.sel, want)
				}
				if w.svc == nil || w.svc.Name != "webhook" || w.svc.Namespace != r.vc.Namespace || w.fp == nil || *w.fp != admissionv1.Fail || w.rules != 0 {
					return fmt.Errorf("webhook service %+v failurePolicy %v rules %d", w.svc, w.fp, w.rules)
				}
			}
			return nil
		}},
	{id: "pc-cip-crd", chart: "policy-controller", upstream: upPolicyController, source: "PC/templates/crds/clusterimagepolicy.yaml",
		text: "CRD clusterimagepolicies.policy.sigstore.dev is a template of the release, not in crds/ (helm uninstall deletes it and every ClusterImagePolicy with it): ClusterImagePolicy, cluster-scoped, v1alpha1 stored and v1beta1 served",
		check: func(r *rendering) error {
			if err := crdsIn(r, "policy-controller", nil); err != nil {
				return err
			}
			crd, err := renderedCRD(r, admission.CIPCRD)
			if err != nil {
				return err
			}
			vs := map[string][2]bool{}
			for _, v := range crd.Spec.Versions {
				vs[v.Name] = [2]bool{v.Served, v.Storage}
			}
			if crd.Spec.Scope != apiextensionsv1.ClusterScoped || crd.Spec.Names.Kind != "ClusterImagePolicy" ||
				vs["v1alpha1"] != [2]bool{true, true} || vs["v1beta1"] != [2]bool{true, false} {
				return fmt.Errorf("scope %s kind %s versions %v", crd.Spec.Scope, crd.Spec.Names.Kind, vs)
			}
			return nil
		}},
	{id: "pc-cip-valid", chart: "policy-controller", upstream: upPolicyController, source: "PC/templates/crds/clusterimagepolicy.yaml (v1beta1 schema); policy-controller v0.13.1 pkg/apis/policy/v1beta1/clusterimagepolicy_validation.go",
		text: "The console's ClusterImagePolicies (admission.SystemImagesPolicy, admission.RegionPolicy) are valid v1beta1 objects and lose no field to pruning: images[].glob, authorities[] with name and key.data/key.hashAlgorithm or static.action pass, match[] group/version/resource/selector.matchLabels, mode enforce or warn",
		check: func(r *rendering) error {
			crd, err := renderedCRD(r, admission.CIPCRD)
			if err != nil {
				return err
			}
			sc := store.SupplyChain{PublicKeys: []string{testPublicKey}, Admission: store.Admission{Enabled: true, Mode: store.AdmissionWarn, Images: []string{"registry.example.com/acme/**"}}}
			for _, o := range []map[string]any{admission.SystemImagesPolicy(), admission.RegionPolicy("eu-1", sc)} {
				if err := validateCustom(crd, "v1beta1", jsonMap(o)); err != nil {
					return fmt.Errorf("%v: %w", dig(o, "metadata", "name"), err)
				}
			}
			return nil
		}},
	{id: "pc-config", chart: "policy-controller", upstream: upPolicyController, source: "PC/templates/webhook/configmap-policy-controller.yaml; policy-controller v0.13.1 pkg/config/store.go (no-match-policy, deny by default)",
		text: "webhook.configData becomes the data of ConfigMap config-policy-controller in the release namespace: the console's no-match-policy warn is there (without it the webhook denies every image no policy matches)",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			var cm corev1.ConfigMap
			if err := m.typed("ConfigMap", "config-policy-controller", &cm); err != nil {
				return err
			}
			if cm.Namespace != r.vc.Namespace || cm.Data["no-match-policy"] != "warn" {
				return fmt.Errorf("config-policy-controller in %s: %v", cm.Namespace, cm.Data)
			}
			return nil
		}},
	{id: "pc-pdb", chart: "policy-controller", upstream: upPolicyController, source: "PC/templates/webhook/poddisruptionbudget.yaml, values.yaml (webhook.podDisruptionBudget: enabled, minAvailable 1)",
		text: "PodDisruptionBudget <fullname>-webhook keeps minAvailable 1 of the webhook pods: with the default single replica it refuses every eviction (a drain never ends), so the console runs webhook.replicaCount 2",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			pdbs, err := m.pdbs()
			if err != nil {
				return err
			}
			if len(pdbs) != 1 || pdbs[0].Name != pcFullname(r)+"-webhook" || pdbs[0].Spec.MinAvailable == nil || pdbs[0].Spec.MinAvailable.IntValue() != 1 ||
				!selects(pdbs[0], pcWebhookSelector(r)) {
				return fmt.Errorf("budgets %+v", pdbs)
			}
			if n := fmt.Sprint(dig(r.values, "webhook", "replicaCount")); n == "1" {
				return errors.New("one webhook replica under minAvailable 1: no drain can evict it")
			}
			return nil
		}},
}

// testPublicKey is a cosign public key (ECDSA P-256) for the policy facts.
var testPublicKey = func() string {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		panic(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}()
