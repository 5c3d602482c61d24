package domains

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// FunctionTLSSecret and the default TLSStore serve the function domain.
const (
	FunctionTLSSecret = "runr-function-tls"
	DefaultTLSStore   = "default"
)

// ApplyFunctionTLS writes the Secret runr-function-tls and Traefik's default TLSStore in the
// Serving namespace. A default TLSStore RunR did not create is replaced only on request.
func (s *Service) ApplyFunctionTLS(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region, certPEM, keyPEM string, replace bool) error {
	ns := r.ServingNamespace
	existing, found, err := c.Get(ctx, kube.GVKTLSStore, ns, DefaultTLSStore)
	if err != nil {
		return err
	}
	if found && existing.GetLabels()["app.kubernetes.io/managed-by"] != "runr" && !replace {
		return fmt.Errorf("a default TLSStore %s/%s that RunR did not create exists: upload again with replace_existing to replace it", ns, DefaultTLSStore)
	}
	base, err := s.Store.BaseDomain(ctx)
	if err != nil {
		return err
	}
	domain := FunctionDomain(r, base)
	expires, errs := kit.CheckCertificate(certPEM, keyPEM, domain, time.Now())
	if errs != nil {
		for _, m := range errs {
			return errors.New(m)
		}
	}
	labels := map[string]any{"app.kubernetes.io/managed-by": "runr"}
	if _, err := c.ApplyObject(ctx, map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
		"metadata":   map[string]any{"name": FunctionTLSSecret, "namespace": ns, "labels": labels},
		"stringData": map[string]any{"tls.crt": certPEM, "tls.key": keyPEM}}); err != nil {
		return err
	}
	if found && replace {
		if err := c.Delete(ctx, kube.GVKTLSStore, ns, DefaultTLSStore); err != nil {
			return err
		}
	}
	if _, err := c.ApplyObject(ctx, map[string]any{"apiVersion": "traefik.io/v1alpha1", "kind": "TLSStore",
		"metadata": map[string]any{"name": DefaultTLSStore, "namespace": ns, "labels": labels},
		"spec":     map[string]any{"defaultCertificate": map[string]any{"secretName": FunctionTLSSecret}}}); err != nil {
		return err
	}
	jc.Note("Traefik serves *.%s with the uploaded certificate (expires %s)", domain, expires.Format("2006-01-02"))
	return s.Store.SetFunctionTLS(ctx, r.ID, certPEM, keyPEM, &expires)
}

// RemoveFunctionTLS deletes the function-domain certificate and the default TLSStore RunR created.
func (s *Service) RemoveFunctionTLS(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region) error {
	ns := r.ServingNamespace
	if err := c.Clientset.CoreV1().Secrets(ns).Delete(ctx, FunctionTLSSecret, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Secret %s/%s: %w", ns, FunctionTLSSecret, err)
	}
	st, found, err := c.Get(ctx, kube.GVKTLSStore, ns, DefaultTLSStore)
	if err != nil {
		return err
	}
	if found && st.GetLabels()["app.kubernetes.io/managed-by"] == "runr" {
		if err := c.Delete(ctx, kube.GVKTLSStore, ns, DefaultTLSStore); err != nil {
			return err
		}
	} else if found {
		jc.Logf("The default TLSStore was not created by RunR: it stays")
	}
	jc.Note("Function TLS is off: Traefik answers HTTPS with its own default certificate")
	return s.Store.SetFunctionTLS(ctx, r.ID, "", "", nil)
}

// FunctionDomain is the region's function domain: its own, or <region>.<base domain>.
func FunctionDomain(r *store.Region, base string) string {
	if r.Settings.V.KnativeDomain != "" {
		return r.Settings.V.KnativeDomain
	}
	if base == "" {
		return ""
	}
	return r.Name + "." + base
}
