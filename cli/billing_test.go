package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"runr.dev/console/config"
	"runr.dev/console/store"
)

// TestCLIBilling: `runr regions billing` and `runr billing` drive the Billing tab and
// Settings → Billing through the API: a region becomes fixed and its allocation charge is
// listed, a refused change says why and changes nothing, the webhook's secret comes from an
// environment variable and a test event is delivered; without the module the command says so.
func TestCLIBilling(t *testing.T) {
	e := consoleForCLI(t, func(c *config.Config) { c.Billing = true })
	if err := e.Store.CreateRegion(context.Background(), &store.Region{Name: "eu-1", Kubeconfig: "not a kubeconfig", RedisMode: store.RedisNone}); err != nil {
		t.Fatal(err)
	}
	out := mustCLI(t, "regions", "billing", "set", "eu-1", "--type", "fixed", "--fixed-price", "250", "--cpu-m", "2000", "--memory-mi", "4096")
	if !strings.Contains(out, "fixed") || !strings.Contains(out, "2000m CPU, 4096 MiB") {
		t.Fatalf("regions billing set: %s", out)
	}
	if _, _, err := cli(t, "", "regions", "billing", "set", "eu-1", "--vcpu-hour", "cheap"); err == nil || !strings.Contains(err.Error(), "vcpu_hour") {
		t.Fatalf("a price that is no number: %v", err)
	}
	if out := mustCLI(t, "regions", "billing", "show", "eu-1", "-o", "json"); !strings.Contains(out, `"vcpu_hour": "0.00"`) {
		t.Fatalf("the refused price changed the region: %s", out)
	}
	if out := mustCLI(t, "billing", "charges"); !strings.Contains(out, "(allocation)") || !strings.Contains(out, "250.00") {
		t.Fatalf("billing charges: %s", out)
	}
	if _, _, err := cli(t, "", "billing", "set", "--currency", "USD"); err == nil || !strings.Contains(err.Error(), "currency") {
		t.Fatalf("a currency change after the first charge: %v", err)
	}

	recv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer recv.Close()
	t.Setenv(envWebhookSecret, "whsec-cli-0123456789")
	if out := mustCLI(t, "billing", "set", "--webhook-url", recv.URL, "--webhook-secret-env", envWebhookSecret, "-o", "json"); !strings.Contains(out, `"webhook_secret_set": true`) {
		t.Fatalf("billing set: %s", out)
	}
	if out := mustCLI(t, "billing", "settings", "-o", "json"); strings.Contains(out, "whsec-cli") {
		t.Fatalf("billing settings shows the secret: %s", out)
	}
	if out := mustCLI(t, "billing", "test-event"); !strings.Contains(out, "delivered") {
		t.Fatalf("billing test-event: %s", out)
	}
	if out := mustCLI(t, "billing", "events", "--status", "delivered"); !strings.Contains(out, "test") {
		t.Fatalf("billing events: %s", out)
	}

	consoleForCLI(t)
	if _, _, err := cli(t, "", "billing", "charges"); err == nil || !strings.Contains(err.Error(), "Billing module is off") {
		t.Fatalf("billing with the module off: %v", err)
	}
}
