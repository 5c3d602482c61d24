package testcluster_test

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"runr.dev/console/ops"
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
			if pt.Labels["app.kubernetes.io/name"] != "cloudnative-pg" || pt.Labels["app.kubernetes.io/instance"] != ops.CNPGRelease {
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
			_, role, db := ops.PostgresBindingObjects(sampleBinding())
			for name, obj := range map[string]map[string]any{"clusters.postgresql.cnpg.io": ops.PostgresClusterObject("standard", 10),
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
			if pt.Labels["app.kubernetes.io/component"] != "seaweedfs-all-in-one" || pt.Spec.Containers[0].Image != ops.SeaweedFSImage {
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
	{id: "seaweedfs-s3-secret", chart: "seaweedfs", upstream: upSeaweed,
		source: "SW/templates/s3/s3-secret.yaml",
		text:   "the S3 credentials Secret seaweedfs-s3-secret (key seaweedfs_s3_config, admin and read identities) is a pre-install,pre-upgrade hook with helm.sh/resource-policy: keep: helm uninstall leaves it behind, so the console deletes it when it removes the object store",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			o := m.find("Secret", "seaweedfs-s3-secret")
			if o == nil {
				return fmt.Errorf("no Secret seaweedfs-s3-secret (have %v)", m.names())
			}
			a := o.GetAnnotations()
			if a["helm.sh/hook"] != "pre-install,pre-upgrade" || a["helm.sh/resource-policy"] != "keep" {
				return fmt.Errorf("annotations %v", a)
			}
			if sd, _, _ := nestedString(o, "stringData", "seaweedfs_s3_config"); !strings.Contains(sd, `"identities"`) {
				return fmt.Errorf("no identities in seaweedfs_s3_config")
			}
			return nil
		}},
}
