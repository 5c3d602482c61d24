package data

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// PostgreSQL is CloudNativePG (chart cloudnative-pg 0.29.0, operator 1.30.0) in
// cnpg-system and one Cluster in runr-data. Each binding gets its own role and database
// through CloudNativePG's declarative management: a DatabaseRole (the standalone form of a
// managed role, the one CloudNativePG 1.30 recommends) with its password Secret, and a
// Database it owns, both with the delete reclaim policy so that removing them drops them.

// CloudNativePG's resources.
var (
	gvkCNPGCluster  = schema.GroupVersionKind{Group: "postgresql.cnpg.io", Version: "v1", Kind: "Cluster"}
	gvkCNPGDatabase = schema.GroupVersionKind{Group: "postgresql.cnpg.io", Version: "v1", Kind: "Database"}
	gvkCNPGRole     = schema.GroupVersionKind{Group: "postgresql.cnpg.io", Version: "v1", Kind: "DatabaseRole"}
)

// CNPGClusterLabel is the label CloudNativePG puts on a Cluster's pods, volumes and Services.
const CNPGClusterLabel = "cnpg.io/cluster"

// cnpgCRDs are the CRDs the install waits for.
var cnpgCRDs = []string{"clusters.postgresql.cnpg.io", "databases.postgresql.cnpg.io", "databaseroles.postgresql.cnpg.io"}

func (s *Service) postgresInstallSteps(p Params) []engine.Step {
	return []engine.Step{
		s.RegionStep("operator", "Install CloudNativePG "+ChartCloudNativePG.Version, func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			if _, err := kit.EnsureNamespace(ctx, jc, c, CNPGNamespace, nil); err != nil {
				return err
			}
			out, err := s.HelmApply(ctx, jc, c, kit.Release{Namespace: CNPGNamespace, Name: CNPGRelease, Chart: ChartCloudNativePG, Values: CNPGValues()})
			if err != nil {
				return err
			}
			if err := kit.WaitRelease(ctx, jc, c, out, engine.WaitOpts{}); err != nil {
				return err
			}
			for _, crd := range cnpgCRDs {
				if err := jc.Wait(ctx, "CRD "+crd+" to be established", engine.WaitOpts{}, c.CRDEstablished(crd)); err != nil {
					return err
				}
			}
			jc.Note("CloudNativePG's operator runs in %s", CNPGNamespace)
			return nil
		}),
		s.RegionStep("cluster", "Create the PostgreSQL cluster", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			if _, err := kit.EnsureNamespace(ctx, jc, c, DataNamespace, nil); err != nil {
				return err
			}
			if _, err := c.ApplyObject(ctx, PostgresClusterObject(p.StorageClass, p.SizeGi)); err != nil {
				return err
			}
			if err := jc.Wait(ctx, "Cluster "+DataNamespace+"/"+PostgresCluster+" to be ready", engine.WaitOpts{Hint: "kubectl describe cluster -n " + DataNamespace + " " + PostgresCluster},
				cnpgClusterReady(c)); err != nil {
				return err
			}
			jc.Note("PostgreSQL answers at %s:%d (%d GiB)", PostgresHost(), postgresPort, p.SizeGi)
			return nil
		}),
	}
}

// PostgresClusterObject is the region's CloudNativePG Cluster: one instance on a volume
// of the given class and size.
func PostgresClusterObject(storageClass string, sizeGi int) map[string]any {
	storage := map[string]any{"size": fmt.Sprintf("%dGi", sizeGi)}
	if storageClass != "" {
		storage["storageClass"] = storageClass
	}
	return map[string]any{"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
		"metadata": map[string]any{"name": PostgresCluster, "namespace": DataNamespace, "labels": kit.ToAnyMap(kit.ManagedLabels(nil))},
		"spec":     map[string]any{"instances": 1, "storage": storage}}
}

// PostgresBindingObjects are a postgres binding's password Secret (basic-auth, reloaded by
// CloudNativePG), its DatabaseRole and its Database, both dropped when deleted.
func PostgresBindingObjects(b *store.Binding) (secret, role, db map[string]any) {
	name, obj := bindingSecretName(b), bindingObjectName(b)
	secret = map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/basic-auth",
		"metadata":   map[string]any{"name": name, "namespace": DataNamespace, "labels": kit.ToAnyMap(kit.ManagedLabels(map[string]string{"cnpg.io/reload": "true"}))},
		"stringData": map[string]any{"username": b.Credentials["PGUSER"], "password": b.Credentials["PGPASSWORD"]}}
	cluster := map[string]any{"name": PostgresCluster}
	role = map[string]any{"apiVersion": "postgresql.cnpg.io/v1", "kind": "DatabaseRole",
		"metadata": map[string]any{"name": obj, "namespace": DataNamespace, "labels": kit.ToAnyMap(kit.ManagedLabels(nil))},
		"spec": map[string]any{"cluster": cluster, "name": b.Resource, "login": true, "databaseRoleReclaimPolicy": "delete",
			"passwordSecret": map[string]any{"name": name}}}
	db = map[string]any{"apiVersion": "postgresql.cnpg.io/v1", "kind": "Database",
		"metadata": map[string]any{"name": obj, "namespace": DataNamespace, "labels": kit.ToAnyMap(kit.ManagedLabels(nil))},
		"spec":     map[string]any{"cluster": cluster, "name": b.Resource, "owner": b.Resource, "databaseReclaimPolicy": "delete"}}
	return secret, role, db
}

// cnpgClusterReady holds once CloudNativePG reports the Cluster ready with every instance.
func cnpgClusterReady(c *kube.Cluster) kube.Cond {
	return c.ResourceJudged(gvkCNPGCluster, DataNamespace, PostgresCluster, func(o *unstructured.Unstructured) (bool, string, error) {
		want, _, _ := unstructured.NestedInt64(o.Object, "spec", "instances")
		have, _, _ := unstructured.NestedInt64(o.Object, "status", "readyInstances")
		phase, _, _ := unstructured.NestedString(o.Object, "status", "phase")
		ready, _ := kube.ReadyCondition(o)
		return ready && have >= want, fmt.Sprintf("%d/%d instances ready; %s", have, want, kit.OrV(phase, "no phase yet")), nil
	})
}

func (s *Service) postgresRemoveSteps() []engine.Step {
	return []engine.Step{
		s.RegionStep("cluster", "Delete the PostgreSQL cluster and its volumes", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			if err := c.Delete(ctx, gvkCNPGCluster, DataNamespace, PostgresCluster); err != nil {
				return err
			}
			if err := jc.Wait(ctx, "the volumes of Cluster "+DataNamespace+"/"+PostgresCluster+" to be deleted", engine.WaitOpts{}, cnpgClusterGone(c)); err != nil {
				return err
			}
			jc.Note("Cluster %s and its volumes are deleted", PostgresCluster)
			return nil
		}),
		s.RegionStep("operator", "Remove CloudNativePG", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			if err := s.HelmUninstall(ctx, jc, c, CNPGNamespace, CNPGRelease); err != nil {
				return err
			}
			jc.Note("CloudNativePG's operator is removed; its CRDs stay (the chart keeps them), and so does the namespace %s", CNPGNamespace)
			return nil
		}),
	}
}

// cnpgClusterGone holds once the Cluster, its pods and its volume claims are gone.
func cnpgClusterGone(c *kube.Cluster) kube.Cond {
	return func(ctx context.Context) (bool, string, error) {
		sel := metav1.ListOptions{LabelSelector: CNPGClusterLabel + "=" + PostgresCluster}
		pvcs, err := c.Clientset.CoreV1().PersistentVolumeClaims(DataNamespace).List(ctx, sel)
		if err != nil {
			return false, "", fmt.Errorf("list the volumes of %s: %w", PostgresCluster, err)
		}
		pods, err := c.Clientset.CoreV1().Pods(DataNamespace).List(ctx, sel)
		if err != nil {
			return false, "", fmt.Errorf("list the pods of %s: %w", PostgresCluster, err)
		}
		_, found, err := c.Get(ctx, gvkCNPGCluster, DataNamespace, PostgresCluster)
		if err != nil {
			return false, "", err
		}
		return !found && len(pvcs.Items) == 0 && len(pods.Items) == 0, fmt.Sprintf("%d volume(s), %d pod(s) left", len(pvcs.Items), len(pods.Items)), nil
	}
}

// postgresCredentials are a postgres binding's connection settings: its own database
// and role on the region's cluster.
func postgresCredentials(p *store.Project) (resource string, creds map[string]string) {
	name := "p_" + strings.ReplaceAll(p.Slug, "-", "_")
	pw := randomSecret()
	return name, map[string]string{
		"PGHOST": PostgresHost(), "PGPORT": fmt.Sprint(postgresPort), "PGDATABASE": name, "PGUSER": name, "PGPASSWORD": pw,
		"DATABASE_URL": fmt.Sprintf("postgresql://%s:%s@%s:%d/%s", name, pw, PostgresHost(), postgresPort, name),
	}
}

// postgresBind declares the binding's role (login, its password from a basic-auth
// Secret) and its database owned by it, and waits until CloudNativePG applied both.
func (s *Service) postgresBind(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region, b *store.Binding) error {
	obj := bindingObjectName(b)
	secret, role, db := PostgresBindingObjects(b)
	if _, err := c.ApplyObject(ctx, secret); err != nil {
		return err
	}
	for _, o := range []struct {
		obj  map[string]any
		gvk  schema.GroupVersionKind
		what string
	}{{role, gvkCNPGRole, "role"}, {db, gvkCNPGDatabase, "database"}} {
		if _, err := c.ApplyObject(ctx, o.obj); err != nil {
			return err
		}
		if err := jc.Wait(ctx, fmt.Sprintf("%s %s/%s (%s %s) to be applied", o.gvk.Kind, DataNamespace, obj, o.what, b.Resource), engine.WaitOpts{
			Hint: "kubectl get " + strings.ToLower(o.gvk.Kind) + " -n " + DataNamespace + " " + obj + " -o yaml"}, cnpgApplied(c, o.gvk, obj)); err != nil {
			return err
		}
	}
	jc.Note("Database %s owned by role %s on %s", b.Resource, b.Resource, PostgresCluster)
	return nil
}

// cnpgApplied holds once CloudNativePG applied the current generation of a Database or
// DatabaseRole (status.applied, status.observedGeneration); a refusal is its message.
func cnpgApplied(c *kube.Cluster, gvk schema.GroupVersionKind, name string) kube.Cond {
	return c.ResourceJudged(gvk, DataNamespace, name, func(o *unstructured.Unstructured) (bool, string, error) {
		applied, set, _ := unstructured.NestedBool(o.Object, "status", "applied")
		gen, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
		msg, _, _ := unstructured.NestedString(o.Object, "status", "message")
		if set && !applied && msg != "" {
			return false, "refused: " + msg, nil
		}
		return applied && gen >= o.GetGeneration(), kit.OrV(msg, "not applied yet"), nil
	})
}

// postgresUnbind drops the binding's database (deleting the Database), then its role,
// then its password Secret.
func (s *Service) postgresUnbind(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region, b *store.Binding) error {
	obj := bindingObjectName(b)
	for _, gvk := range []schema.GroupVersionKind{gvkCNPGDatabase, gvkCNPGRole} {
		if err := c.Delete(ctx, gvk, DataNamespace, obj); err != nil {
			return err
		}
		if err := jc.Wait(ctx, fmt.Sprintf("%s %s/%s to be dropped", gvk.Kind, DataNamespace, obj), engine.WaitOpts{}, func(ctx context.Context) (bool, string, error) {
			_, found, err := c.Get(ctx, gvk, DataNamespace, obj)
			return !found, "still there", err
		}); err != nil {
			return err
		}
	}
	jc.Note("Dropped database %s and role %s", b.Resource, b.Resource)
	return kit.DeleteSecret(ctx, c, DataNamespace, bindingSecretName(b))
}
