package testcluster_test

import (
	"errors"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// The system-upgrade-controller chart (release system-upgrade-controller in cattle-system).
const upSUC = "system-upgrade-controller 105.0.0 (rancher/charts, branch dev-v2.10: charts/system-upgrade-controller/105.0.0; rancher/system-upgrade-controller v0.14.2)"

func init() { contractFacts = append(contractFacts, sucFacts...) }

var sucFacts = []fact{
	{id: "suc-cattle-system", chart: "system-upgrade-controller", upstream: upSUC, source: "templates/deployment.yaml, serviceaccount.yaml, clusterrolebinding.yaml, configmap.yaml",
		text: "Every namespaced object is in cattle-system whatever the release's namespace: Deployment system-upgrade-controller (selector and pods upgrade.cattle.io/controller=system-upgrade-controller, which its drains leave alone; every taint tolerated), ServiceAccount system-upgrade-controller bound to ClusterRole cluster-admin (the account the console's Plans run with), ConfigMap system-upgrade-controller-config as the controller's env",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			for _, o := range m.all() {
				if o.GetKind() != "ClusterRoleBinding" && o.GetNamespace() != "cattle-system" {
					return fmt.Errorf("%s %s in namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
				}
			}
			var d appsv1.Deployment
			if err := m.typed("Deployment", "system-upgrade-controller", &d); err != nil {
				return err
			}
			sel := map[string]string{"upgrade.cattle.io/controller": "system-upgrade-controller"}
			if d.Spec.Selector == nil || !maps.Equal(d.Spec.Selector.MatchLabels, sel) || d.Spec.Template.Labels["upgrade.cattle.io/controller"] != "system-upgrade-controller" {
				return fmt.Errorf("selector %v, pod labels %v", d.Spec.Selector, d.Spec.Template.Labels)
			}
			ps := d.Spec.Template.Spec
			if ps.ServiceAccountName != "system-upgrade-controller" || len(ps.Tolerations) != 1 || ps.Tolerations[0].Operator != corev1.TolerationOpExists {
				return fmt.Errorf("service account %q, tolerations %v", ps.ServiceAccountName, ps.Tolerations)
			}
			if len(ps.Containers) != 1 || len(ps.Containers[0].EnvFrom) != 1 || ps.Containers[0].EnvFrom[0].ConfigMapRef == nil ||
				ps.Containers[0].EnvFrom[0].ConfigMapRef.Name != "system-upgrade-controller-config" || m.find("ConfigMap", "system-upgrade-controller-config") == nil {
				return errors.New("the controller's env is not ConfigMap system-upgrade-controller-config")
			}
			var crb rbacv1.ClusterRoleBinding
			if err := m.typed("ClusterRoleBinding", "system-upgrade-controller", &crb); err != nil {
				return err
			}
			if crb.RoleRef.Name != "cluster-admin" || len(crb.Subjects) != 1 || crb.Subjects[0].Name != "system-upgrade-controller" || crb.Subjects[0].Namespace != "cattle-system" {
				return fmt.Errorf("binding %v to %v", crb.Subjects, crb.RoleRef)
			}
			if m.find("ServiceAccount", "system-upgrade-controller") == nil {
				return errors.New("no ServiceAccount system-upgrade-controller")
			}
			return nil
		}},
	{id: "suc-no-crd", chart: "system-upgrade-controller", upstream: upSUC, source: "the chart's files (no crds/, no CRD template); pkg/upgrade/controller.go (registerCRD), pkg/upgrade/plan/plan.go (CRD)",
		text: "The chart ships no CRD: the controller registers plans.upgrade.cattle.io (Plan upgrade.cattle.io/v1, namespaced, with a status subresource) when it starts, so a Plan can be created only once the controller runs",
		check: func(r *rendering) error {
			if err := crdsIn(r, "system-upgrade-controller", nil); err != nil {
				return err
			}
			m, err := r.rendered()
			if err != nil {
				return err
			}
			for _, o := range m.all() {
				if o.GetKind() == "CustomResourceDefinition" {
					return fmt.Errorf("CRD %s in templates/", o.GetName())
				}
			}
			return nil
		}},
	{id: "suc-images", chart: "system-upgrade-controller", upstream: upSUC, source: "values.yaml, templates/deployment.yaml, configmap.yaml, _helpers.tpl (system_default_registry)",
		text: "The controller runs rancher/system-upgrade-controller:<appVersion> (v0.14.2); its drain and cordon containers run SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE rancher/kubectl:v1.31.1 (both after global.cattle.systemDefaultRegistry when set)",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			pt, err := m.podTemplate("Deployment", "system-upgrade-controller")
			if err != nil {
				return err
			}
			if img := pt.Spec.Containers[0].Image; img != "rancher/system-upgrade-controller:"+r.cv.AppVersion {
				return fmt.Errorf("controller image %s, appVersion %s", img, r.cv.AppVersion)
			}
			var cm corev1.ConfigMap
			if err := m.typed("ConfigMap", "system-upgrade-controller-config", &cm); err != nil {
				return err
			}
			if img := cm.Data["SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE"]; img != "rancher/kubectl:v1.31.1" {
				return fmt.Errorf("kubectl image %q", img)
			}
			return nil
		}},
}
