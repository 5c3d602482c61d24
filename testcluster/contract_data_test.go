package testcluster_test

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"runr.dev/console/ops/data"
	"runr.dev/console/store"
)

const (
	upCNPG    = "cloudnative-pg 0.29.0 (cloudnative-pg/charts, tag cloudnative-pg-v0.29.0: CP = charts/cloudnative-pg; operator cloudnative-pg/cloudnative-pg v1.30.0)"
	upSeaweed = "seaweedfs 4.44.0 (seaweedfs/seaweedfs, tag 4.44: SW = k8s/charts/seaweedfs)"
)

func init() { contractFacts = append(contractFacts, dataFacts...) }

// sampleBinding is a postgres binding as the console records it.
func sampleBinding() *store.Binding {
	return &store.Binding{Service: store.DataPostgres, ProjectSlug: "shop", Resource: "p_shop",
		Credentials: map[string]string{"PGUSER": "p_shop", "PGPASSWORD": "x"}}
}

// servicePorts are a rendered Service's ports by name.
func servicePorts(r *rendering, name string) (map[string]int32, error) {
	m, err := r.rendered()
	if err != nil {
		return nil, err
	}
	var svc corev1.Service
	if err := m.typed("Service", name, &svc); err != nil {
		return nil, err
	}
	out := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		out[p.Name] = p.Port
	}
	return out, nil
}

var dataFacts = []fact{
	{id: "cnpg-operator", chart: "cloudnative-pg", upstream: upCNPG,
		source: "CP/Chart.yaml (version, appVersion), CP/templates/_helpers.tpl (fullname, selectorLabels), CP/templates/deployment.yaml, CP/values.yaml (image)",
		text:   "chart 0.29.0 of operator 1.30.0; release cnpg makes Deployment cnpg-cloudnative-pg whose pods carry app.kubernetes.io/name=cloudnative-pg and app.kubernetes.io/instance=cnpg, container manager of ghcr.io/cloudnative-pg/cloudnative-pg:<appVersion>",
		check: func(r *rendering) error {
			if r.cv.Version != "0.29.0" || r.cv.AppVersion != "1.30.0" {
				return fmt.Errorf("version %s appVersion %s", r.cv.Version, r.cv.AppVersion)
			}
			m, err := r.rendered()
			if err != nil {
				return err
			}
			pt, err := m.podTemplate("Deployment", "cnpg-cloudnative-pg")
			if err != nil {
				return err
			}
			if pt.Labels["app.kubernetes.io/name"] != "cloudnative-pg" || pt.Labels["app.kubernetes.io/instance"] != data.CNPGRelease {
				return fmt.Errorf("operator pod labels %v", pt.Labels)
			}
			if c := pt.Spec.Containers[0]; c.Name != "manager" || c.Image != "ghcr.io/cloudnative-pg/cloudnative-pg:1.30.0" {
				return fmt.Errorf("operator container %s %s", c.Name, c.Image)
			}
			return nil
		}},
	{id: "cnpg-crds", chart: "cloudnative-pg", upstream: upCNPG,
		source: "CP/templates/crds/crds.yaml (under crds.create, helm.sh/resource-policy: keep)",
		text:   "the CRDs clusters, databases and databaseroles.postgresql.cnpg.io (v1, namespaced, status subresource) are templates of the release, rendered with crds.create and kept by helm uninstall (helm.sh/resource-policy: keep); the console's Cluster, Database and DatabaseRole fit their schemas (Database requires cluster, name, owner; DatabaseRole cluster and name; both reclaim policies are delete or retain, retain by default)",
		check: func(r *rendering) error {
			_, role, db := data.PostgresBindingObjects(sampleBinding())
			for name, obj := range map[string]map[string]any{"clusters.postgresql.cnpg.io": data.PostgresClusterObject("standard", 10),
				"databases.postgresql.cnpg.io": db, "databaseroles.postgresql.cnpg.io": role} {
				crd, err := renderedCRD(r, name)
				if err != nil {
					return err
				}
				if crd.Annotations["helm.sh/resource-policy"] != "keep" || crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
					return fmt.Errorf("%s: annotations %v, scope %s", name, crd.Annotations, crd.Spec.Scope)
				}
				if err := validateCustom(crd, "v1", obj); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				if v := crd.Spec.Versions[0]; v.Subresources == nil || v.Subresources.Status == nil {
					return fmt.Errorf("%s has no status subresource", name)
				}
			}
			if len(r.chart.CRDObjects()) != 0 {
				return fmt.Errorf("upstream keeps its CRDs in templates/crds, not crds/")
			}
			return nil
		}},
	{id: "seaweedfs-all-in-one", chart: "seaweedfs", upstream: upSeaweed,
		source: "SW/Chart.yaml, SW/templates/all-in-one/all-in-one-deployment.yaml, all-in-one-service.yml, all-in-one-pvc.yaml, SW/templates/shared/_helpers.tpl (fullname, componentName, image), SW/values.yaml (master/volume/filer/s3 ports, global.seaweedfs.image.name)",
		text:   "with allInOne.enabled and master, volume and filer off, the release seaweedfs makes one workload, Deployment seaweedfs-all-in-one (strategy Recreate; pods app.kubernetes.io/name=seaweedfs, app.kubernetes.io/instance=seaweedfs, app.kubernetes.io/component=seaweedfs-all-in-one; image chrislusf/seaweedfs:<appVersion 4.44>) on the claim seaweedfs-all-in-one-data (allInOne.data size and storageClass), behind Service seaweedfs-all-in-one with the master (9333, gRPC 19333), filer (8888) and, with allInOne.s3.enabled, S3 (8333) ports; allInOne.s3.enableAuth starts the gateway with -s3.config from Secret seaweedfs-s3-secret",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			var kinds []string
			for _, o := range m.objects {
				if slices.Contains([]string{"Deployment", "StatefulSet", "DaemonSet"}, o.GetKind()) {
					kinds = append(kinds, o.GetKind()+"/"+o.GetName())
				}
			}
			if !slices.Equal(kinds, []string{"Deployment/seaweedfs-all-in-one"}) {
				return fmt.Errorf("workloads %v", kinds)
			}
			pt, err := m.podTemplate("Deployment", "seaweedfs-all-in-one")
			if err != nil {
				return err
			}
			if pt.Labels["app.kubernetes.io/component"] != "seaweedfs-all-in-one" || pt.Spec.Containers[0].Image != data.SeaweedFSImage {
				return fmt.Errorf("pod labels %v image %s", pt.Labels, pt.Spec.Containers[0].Image)
			}
			if !strings.Contains(strings.Join(pt.Spec.Containers[0].Command, " "), "-s3.config=/etc/sw/s3/seaweedfs_s3_config") {
				return fmt.Errorf("the S3 gateway must start with its identities file: %v", pt.Spec.Containers[0].Command)
			}
			var pvc corev1.PersistentVolumeClaim
			if err := m.typed("PersistentVolumeClaim", "seaweedfs-all-in-one-data", &pvc); err != nil {
				return err
			}
			if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != fmt.Sprint(r.values["allInOne"].(map[string]any)["data"].(map[string]any)["size"]) {
				return fmt.Errorf("claim size %s", q.String())
			}
			if sc, _ := r.values["allInOne"].(map[string]any)["data"].(map[string]any)["storageClass"].(string); sc != "" && (pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != sc) {
				return fmt.Errorf("claim class %v, want %s", pvc.Spec.StorageClassName, sc)
			}
			ports, err := servicePorts(r, "seaweedfs-all-in-one")
			if err != nil {
				return err
			}
			if ports["swfs-master"] != 9333 || ports["swfs-master-grpc"] != 19333 || ports["swfs-filer"] != 8888 || ports["swfs-s3"] != 8333 {
				return fmt.Errorf("service ports %v", ports)
			}
			return nil
		}},
	{id: "seaweedfs-kept-secrets", chart: "seaweedfs", upstream: upSeaweed,
		source: "SW/templates/s3/s3-secret.yaml, SW/templates/sftp/sftp-secret.yaml, SW/templates/sftp/sftp-ssh-secret.yaml, SW/templates/shared/_helpers.tpl (seaweedfs.getOrGeneratePassword)",
		text:   "the release's hooks are Secrets with helm.sh/hook pre-install,pre-upgrade and helm.sh/resource-policy: keep, which helm uninstall leaves behind: seaweedfs-s3-secret (key seaweedfs_s3_config, the admin and read identities) and seaweedfs-sftp-secret (generated SFTP passwords and host key), rendered under sftp.enabled or allInOne.enabled, so for every all-in-one release whatever allInOne.sftp.enabled says (seaweedfs-sftp-ssh-secret too, once an SFTP server runs); each carries app.kubernetes.io/name=seaweedfs and app.kubernetes.io/instance=<release>, by which the console deletes them when it removes the object store",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			sel, err := labels.Parse(data.SeaweedFSReleaseSelector)
			if err != nil {
				return err
			}
			var kept []string
			for _, o := range m.all() {
				a := o.GetAnnotations()
				if a["helm.sh/hook"] == "" && a["helm.sh/resource-policy"] != "keep" {
					continue
				}
				if o.GetKind() != "Secret" || a["helm.sh/hook"] != "pre-install,pre-upgrade" || a["helm.sh/resource-policy"] != "keep" {
					return fmt.Errorf("%s/%s: annotations %v, the console removes kept hook Secrets only", o.GetKind(), o.GetName(), a)
				}
				if !sel.Matches(labels.Set(o.GetLabels())) {
					return fmt.Errorf("Secret %s (labels %v) is not selected by the removal's %s: it would stay in %s", o.GetName(), o.GetLabels(), data.SeaweedFSReleaseSelector, data.DataNamespace)
				}
				kept = append(kept, o.GetName())
			}
			slices.Sort(kept)
			if !slices.Equal(kept, []string{"seaweedfs-s3-secret", "seaweedfs-sftp-secret"}) {
				return fmt.Errorf("kept hook Secrets %v, want seaweedfs-s3-secret and seaweedfs-sftp-secret", kept)
			}
			s3 := m.find("Secret", "seaweedfs-s3-secret")
			if sd, _, _ := nestedString(s3, "stringData", "seaweedfs_s3_config"); !strings.Contains(sd, `"identities"`) {
				return fmt.Errorf("no identities in seaweedfs_s3_config")
			}
			sftp := m.find("Secret", "seaweedfs-sftp-secret")
			for _, k := range []string{"admin_password", "readonly_password", "public_user_password", "seaweedfs_sftp_config", "seaweedfs_sftp_ssh_private_key"} {
				if v, _, _ := nestedString(sftp, "stringData", k); v == "" {
					return fmt.Errorf("seaweedfs-sftp-secret has no %s", k)
				}
			}
			return nil
		}},
	{id: "seaweedfs-sftp-off", chart: "seaweedfs", upstream: upSeaweed,
		source: "SW/templates/all-in-one/all-in-one-deployment.yaml, all-in-one-service.yml (allInOne.sftp.enabled), SW/templates/sftp/sftp-deployment.yaml (sftp.enabled), SW/values.yaml (both false)",
		text:   "sftp.enabled and allInOne.sftp.enabled false (the console's, also the defaults): no SFTP Deployment, the all-in-one server starts without -sftp, its Service has no swfs-sftp port and no seaweedfs-sftp-ssh-secret is rendered",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			if on, _ := dig(r.values, "allInOne", "sftp", "enabled").(bool); on {
				return fmt.Errorf("allInOne.sftp.enabled is true: an SFTP server nothing uses")
			}
			if on, _ := dig(r.values, "sftp", "enabled").(bool); on {
				return fmt.Errorf("sftp.enabled is true: an SFTP Deployment nothing uses")
			}
			pt, err := m.podTemplate("Deployment", "seaweedfs-all-in-one")
			if err != nil {
				return err
			}
			if cmd := strings.Join(pt.Spec.Containers[0].Command, " "); strings.Contains(cmd, "-sftp") {
				return fmt.Errorf("the server starts SFTP: %s", cmd)
			}
			ports, err := servicePorts(r, "seaweedfs-all-in-one")
			if err != nil {
				return err
			}
			if _, ok := ports["swfs-sftp"]; ok {
				return fmt.Errorf("service ports %v", ports)
			}
			if m.find("Secret", "seaweedfs-sftp-ssh-secret") != nil {
				return fmt.Errorf("an SFTP host key Secret without an SFTP server")
			}
			return nil
		}},
	{id: "seaweedfs-release-objects", chart: "seaweedfs", upstream: upSeaweed,
		source: "SW/templates/shared/service-account.yaml, SW/templates/shared/cluster-role.yaml (global.seaweedfs.createClusterRole, true by default), SW/templates/master/master-configmap.yaml, SW/templates/all-in-one/all-in-one-deployment.yaml (master-config volume)",
		text:   "the release also makes ServiceAccount seaweedfs (global.seaweedfs.serviceAccountName), the cluster-scoped ClusterRole seaweedfs-rw-cr (pods: every verb) and ClusterRoleBinding seaweedfs-rw-crb to it, and ConfigMap seaweedfs-master-config (master.toml, mounted by the all-in-one server at /etc/seaweedfs/master.toml): objects of the release (no hook, no keep), deleted by helm uninstall",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			for _, want := range []string{"ServiceAccount/seaweedfs", "ClusterRole/seaweedfs-rw-cr", "ClusterRoleBinding/seaweedfs-rw-crb", "ConfigMap/seaweedfs-master-config"} {
				kind, name, _ := strings.Cut(want, "/")
				o := m.find(kind, name)
				if o == nil || !slices.ContainsFunc(m.objects, func(x *unstructured.Unstructured) bool { return x == o }) {
					return fmt.Errorf("no %s among the release's objects (have %v)", want, m.names())
				}
				if a := o.GetAnnotations(); a["helm.sh/hook"] != "" || a["helm.sh/resource-policy"] != "" {
					return fmt.Errorf("%s: annotations %v", want, a)
				}
			}
			var cr rbacv1.ClusterRole
			if err := m.typed("ClusterRole", "seaweedfs-rw-cr", &cr); err != nil {
				return err
			}
			if !grants(cr.Rules, "", "pods", []string{"get", "list", "watch", "create", "update", "patch", "delete"}) {
				return fmt.Errorf("ClusterRole seaweedfs-rw-cr rules %v", cr.Rules)
			}
			var crb rbacv1.ClusterRoleBinding
			if err := m.typed("ClusterRoleBinding", "seaweedfs-rw-crb", &crb); err != nil {
				return err
			}
			if crb.RoleRef.Name != "seaweedfs-rw-cr" || len(crb.Subjects) != 1 || crb.Subjects[0].Name != "seaweedfs" || crb.Subjects[0].Namespace != r.vc.Namespace {
				return fmt.Errorf("ClusterRoleBinding seaweedfs-rw-crb %+v %+v", crb.RoleRef, crb.Subjects)
			}
			pt, err := m.podTemplate("Deployment", "seaweedfs-all-in-one")
			if err != nil {
				return err
			}
			return mountedAt(pt, "/etc/seaweedfs/master.toml", "master-config")
		}},
}
