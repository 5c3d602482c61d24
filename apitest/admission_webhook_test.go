package apitest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/ops/admission"
	"runr.dev/console/supplychain/sigtest"
)

// TestPoliciesWaitForTheWebhookCA: right after the policy-controller's webhook runs, the
// API server may not trust it yet (its CA is injected a moment later) and answers every
// ClusterImagePolicy write 500 (x509: unknown authority). The console waits that out,
// naming what it waits for, instead of failing the job. Played here by a webhook on
// loopback for ClusterImagePolicies whose CA bundle is given once the API server failed
// to reach it twice.
func TestPoliciesWaitForTheWebhookCA(t *testing.T) {
	c, e, tok, r := readyRegion(t, "cawait")
	ctx := context.Background()
	var calls, hellos atomic.Int32
	hook := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		calls.Add(1)
		var review map[string]any
		_ = json.NewDecoder(req.Body).Decode(&review)
		uid, _ := review["request"].(map[string]any)["uid"].(string)
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
			"response": map[string]any{"uid": uid, "allowed": true}})
	}))
	// Each attempt of the API server says hello first (and fails its handshake while the
	// CA is not given).
	hook.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { hellos.Add(1); return nil, nil }}
	hook.Config.ErrorLog = log.New(io.Discard, "", 0)
	hook.StartTLS()
	defer hook.Close()
	url, fail, none := hook.URL+"/validate", admissionv1.Fail, admissionv1.SideEffectClassNone
	whc := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "ca-not-injected-yet"},
		Webhooks: []admissionv1.ValidatingWebhook{{Name: "policy.sigstore.dev.test", ClientConfig: admissionv1.WebhookClientConfig{URL: &url},
			Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
				Rule: admissionv1.Rule{APIGroups: []string{"policy.sigstore.dev"}, APIVersions: []string{"*"}, Resources: []string{"clusterimagepolicies"}}}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}}}
	if _, err := c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, whc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	go func() {
		// The CA comes once the console's apply was refused twice, whenever that is.
		for deadline := time.Now().Add(3 * time.Minute); hellos.Load() < 2 && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
		}
		w, err := c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, whc.Name, metav1.GetOptions{})
		if err != nil {
			return
		}
		w.Webhooks[0].ClientConfig.CABundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
		_, _ = c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, w, metav1.UpdateOptions{})
	}()

	key := sigtest.NewKey(t)
	s := putSupplyChain(t, e, tok, r.ID, map[string]any{"public_keys": []string{key.PublicPEM}, "admission": true,
		"admission_mode": "enforce", "admission_images": []string{"registry.example.com/acme/**"}})
	if s.JobID == "" {
		t.Fatal("turning the policy on queues its job")
	}
	if cip(t, c, admission.RegionPolicyName("cawait")) == nil || calls.Load() == 0 {
		t.Fatalf("the policies after the CA came: region policy %v, webhook calls %d", cip(t, c, admission.RegionPolicyName("cawait")) != nil, calls.Load())
	}
	events, err := e.Store.JobEvents(ctx, s.JobID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	waited := false
	for _, ev := range events {
		waited = waited || strings.Contains(ev.Message, "webhooks to accept ClusterImagePolicy")
	}
	if !waited {
		t.Error("the job does not say it waited for the webhooks")
	}
}
