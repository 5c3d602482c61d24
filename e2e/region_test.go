package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"runr.dev/console/store"
	"runr.dev/console/testcluster"
)

// TestRegion runs flows 2, 4 and 5 on one simulated cluster: Add Region steps 1–5 with
// live progress, the region page, and what a Viewer sees and may do. Flows 4 and 5
// work on the region that flow 2 creates.
func TestRegion(t *testing.T) {
	cl := cluster(t)
	c := startConsole(t)
	// The platform's base domain comes first: the Serving install then gives the region
	// its function domain, e2e-1.example.test, which the certificate of flow 4 covers.
	if err := c.Store.SetSetting(context.Background(), "base_domain", "example.test"); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, c.URL)
	b.login(ownerEmail, ownerPassword)

	const name = "e2e-1"
	var regionID string
	if !t.Run("AddRegion", func(t *testing.T) {
		defer b.use(t)()
		regionID = addRegion(t, b, cl, name)
	}) {
		t.Fatal("the region page and the Viewer need the region of Add Region")
	}
	t.Run("RegionPage", func(t *testing.T) {
		defer b.use(t)()
		regionPage(t, b, c, regionID, name)
	})
	t.Run("EveryPage", func(t *testing.T) {
		defer b.use(t)()
		everyPage(t, b, c, regionID)
	})
	b.close() // one browser at a time
	t.Run("Viewer", func(t *testing.T) {
		v := newBrowser(t, c.URL)
		viewer(t, v, c, regionID, name)
	})
}

// addRegion is flow 2: steps 1 to 5 of the wizard, watched live.
func addRegion(t *testing.T, b *browser, cl *testcluster.Cluster, name string) string {
	kubeconfig := string(cl.Kubeconfig())
	b.open("/regions", "[data-testid=add-region]")
	b.click("[data-testid=add-region]")
	b.visible("[data-testid=step1-form]", shortWait)
	b.checkLabels("wizard step 1")
	b.mark()

	// Step 1 with a bad name: the error stands beside the field, the input stays.
	b.typeInto("#f-name", "Bad_Name")
	b.setValue("#f-kubeconfig", kubeconfig)
	b.click("[data-testid=check-connection]")
	b.visible("[data-testid=error-name]", shortWait)
	if got := b.text("[data-testid=error-name]"); !strings.Contains(got, "lowercase letters") {
		t.Fatalf("name error %q", got)
	}
	if b.value("#f-name") != "Bad_Name" || b.value("#f-kubeconfig") != kubeconfig {
		t.Fatalf("step 1 must keep its input on a validation error: name %q, kubeconfig kept %v", b.value("#f-name"), b.value("#f-kubeconfig") == kubeconfig)
	}
	b.expectDescribedBy("#f-name", "err-name")
	// The focus moves once htmx has settled the swap.
	b.waitJS("the focus on the first field with an error (f-name)", `document.activeElement && document.activeElement.id === "f-name"`, shortWait)
	if !b.marked() {
		t.Fatal("step 1 is checked in place (htmx), without a page load")
	}

	// A cluster that does not answer: the checklist says so. Checking again takes the old
	// checklist away as the new check starts (it stayed on screen during the new check).
	b.typeInto("#f-name", name)
	b.setValue("#f-kubeconfig", regexp.MustCompile(`server: \S+`).ReplaceAllString(kubeconfig, "server: https://127.0.0.1:1"))
	b.click("[data-testid=check-connection]")
	b.visible("[data-testid=checklist] [data-testid=check][data-status=fail]", shortWait)
	// Settled: the button is enabled again and htmx has taken over the form it swapped in
	// (a click before that submits the form natively, a page load that ends the test).
	b.waitJS("the first check to settle", `!document.querySelector("[data-testid=check-connection]").disabled &&
		!!(document.querySelector("[data-testid=step1-form]")["htmx-internal-data"] || {}).initHash`, shortWait)
	// Whether the old checklist is still there when the new answer arrives.
	b.eval(`window.__oldChecklist = null;
		document.addEventListener("htmx:beforeSwap", function () { window.__oldChecklist = !!document.querySelector("[data-testid=checklist]"); }, {once: true});
		document.querySelector("[data-testid=check-connection]").click(), true`, nil)
	b.waitJS("the new check's answer", `window.__oldChecklist !== null`, shortWait)
	var old bool
	b.eval(`window.__oldChecklist`, &old)
	if old {
		t.Fatal("the previous checklist must go as a new check starts")
	}
	b.visible("[data-testid=checklist] [data-testid=check][data-status=fail]", shortWait)
	b.setValue("#f-kubeconfig", kubeconfig)

	// Step 1 for real: the button is disabled and the indicator shows while it runs.
	b.watchBusy("[data-testid=check-connection]", "[data-testid=step1-form] .htmx-indicator")
	b.click("[data-testid=check-connection]")
	b.visible("[data-testid=step2-form]", shortWait)
	b.expectBusy("Check connection")
	if n := b.count("[data-testid=check]"); n == 0 {
		t.Fatal("step 1 must show its checklist")
	}
	if n := b.count("[data-testid=check][data-status=fail]"); n != 0 {
		t.Fatalf("%d checks failed on the sandbox cluster: %s", n, b.text("[data-testid=checklist]"))
	}
	// Step 1 is done: read-only but for its one way back (nothing was created yet), and
	// the steps say so.
	var controls int
	b.eval(`Array.from(document.querySelectorAll("[data-testid=step1-done] input:not([type=hidden]), [data-testid=step1-done] select, [data-testid=step1-done] textarea, [data-testid=step1-done] button")).
		filter(function (el) { return !el.closest("[data-testid=step1-change]"); }).length`, &controls)
	if controls != 0 {
		t.Fatalf("the done step 1 has %d controls besides its change button", controls)
	}
	if b.count("[data-testid=step1-form]") != 0 {
		t.Fatal("the step 1 form must be gone once step 1 is done")
	}
	// Change name or cluster opens step 1 again, filled; checking it again leads back to step 2.
	b.submit("[data-testid=step1-change] button")
	b.visible("[data-testid=step1-form]", shortWait)
	if got := b.value("#f-name"); got != name {
		t.Fatalf("the reopened step 1 has the name %q, want %q", got, name)
	}
	b.click("[data-testid=check-connection]")
	b.visible("[data-testid=step2-form]", shortWait)
	b.expectWizardStates("done", "current", "pending", "pending", "pending", "pending", "pending")
	b.checkLabels("wizard step 2")
	b.shot("step2")

	// The Redis address shows with the choices that need one (external, or a Redis in
	// this cluster) and hides with the managed one.
	redisAddressShown := func() bool {
		var shown bool
		b.eval(`document.querySelector("#f-redis_address").offsetParent !== null`, &shown)
		return shown
	}
	for _, step := range []struct {
		mode  string
		shown bool
	}{{"managed", false}, {"in_cluster", true}, {"external", true}, {"managed", false}} {
		b.choose(`[data-testid=step2-form] input[name=redis_mode][value=` + step.mode + `]`)
		if got := redisAddressShown(); got != step.shown {
			t.Fatalf("the Redis address with %s: shown %v, want %v", step.mode, got, step.shown)
		}
	}

	// Step 2 with a bad size: the page comes back with the error beside the field and
	// every choice kept.
	b.click(`[data-testid=step2-form] input[name=nodes][value="worker-1"]`)
	b.setValue("#f-storage_class", "standard")
	b.setValue("#f-size", "ten")
	b.submit("[data-testid=save-next]")
	b.visible("[data-testid=error-pvc_config\\.size]", shortWait)
	if got := b.value("#f-size"); got != "ten" {
		t.Fatalf("size after a validation error: %q", got)
	}
	if got := b.value("#f-storage_class"); got != "standard" {
		t.Fatalf("StorageClass after a validation error: %q", got)
	}
	var checked bool
	b.eval(`document.querySelector('[data-testid=step2-form] input[name=nodes][value="worker-1"]').checked`, &checked)
	if !checked {
		t.Fatal("the dedicated worker must stay selected after a validation error")
	}
	b.expectDescribedBy("#f-size", "err-pvc_config.size")

	// Save & Next: the setup runs, and the page follows it live. Pods stay Pending
	// until release, so the Zot install waits (named) while the test looks.
	release := holdScheduling(t, cl)
	b.setValue("#f-size", "5Gi")
	b.submit("[data-testid=save-next]")
	b.waitJS("the setup page", `location.pathname.startsWith("/regions/setups/") && document.querySelector("[data-testid=job]")`, shortWait)
	setupURL := b.path()
	b.watchJob()
	b.mark()
	b.expectWizardStates("done", "current", "pending", "pending", "pending", "pending", "pending")

	// The steps before Zot finish and Zot waits, named, in the step and in the header.
	const zotWait = "waiting for StatefulSet runr-registry/runr-zot to be ready"
	b.waitJS("Zot's named wait", fmt.Sprintf(`(function(){
		var w = document.querySelector("[data-testid=job-step][data-step=zot][data-status=running] [data-testid=step-wait]");
		return w && w.textContent.indexOf(%q) === 0;
	})()`, zotWait), installWait)
	if !b.marked() {
		t.Fatal("the progress must arrive without a reload")
	}
	if got := b.text("[data-testid=job-wait]"); !strings.HasPrefix(got, zotWait) || !regexp.MustCompile(`\(\d+ (s|min)\)$`).MatchString(got) {
		t.Fatalf("the job's header must name the wait with its deadline: %q", got)
	}
	var states map[string][]string
	b.eval(`window.__e2e.states`, &states)
	if got := states["zot"]; len(got) < 1 || got[len(got)-1] != "running" {
		t.Fatalf("the Zot step's states seen: %v", got)
	}
	if got := b.text("[data-testid=job-step][data-step=zot]"); !strings.Contains(got, "running") {
		t.Fatalf("a running step must say so: %q", got)
	}
	if got := b.text("[data-testid=job-step][data-step=mirror]"); !strings.Contains(got, "pending") {
		t.Fatalf("a step to come must say pending: %q", got)
	}
	b.expectElapsedTicks("[data-testid=job-elapsed]")
	b.shot("setup-running")

	// Reload in the middle: the same history, the same wait.
	before := b.doneSteps()
	logBefore := b.count("[data-testid=log-line]")
	var progressBefore string
	b.eval(`document.querySelector("[data-testid=job-progress]").getAttribute("aria-valuenow")`, &progressBefore)
	b.do(shortWait, "reload", reload())
	b.visible("[data-testid=job]", shortWait)
	b.watchJob()
	b.mark()
	if after := b.doneSteps(); after != before {
		t.Fatalf("after a reload %d steps are done, before it %d", after, before)
	}
	if got := b.text("[data-testid=job-step][data-step=zot] [data-testid=step-wait]"); !strings.HasPrefix(got, zotWait) {
		t.Fatalf("after a reload the running step must name its wait again: %q", got)
	}
	if n := b.count("[data-testid=log-line]"); n < logBefore {
		t.Fatalf("after a reload the log has %d lines, before it %d", n, logBefore)
	}
	var progressAfter string
	b.eval(`document.querySelector("[data-testid=job-progress]").getAttribute("aria-valuenow")`, &progressAfter)
	if progressAfter != progressBefore || progressAfter == "0" || progressAfter == "100" {
		t.Fatalf("the progress bar: %s%% before the reload, %s%% after", progressBefore, progressAfter)
	}

	// It goes on live once the pods may run: more steps are done, with no navigation.
	release()
	b.waitJS("progress after the reload", fmt.Sprintf(`document.querySelectorAll("[data-testid=job-step][data-status=done]").length > %d`, before), installWait)
	if !b.marked() {
		t.Fatal("the progress after a reload must arrive without another")
	}

	// It succeeds live: every step is done (or skipped), the bar is full, and the
	// way on appears.
	b.waitJS("the setup to succeed", `document.querySelector("[data-testid=job-status][data-status=succeeded]")`, installWait)
	b.visible("[data-testid=job-next]", shortWait)
	if !b.marked() {
		t.Fatal("the end of the setup must arrive without a reload")
	}
	if n := b.count("[data-testid=job-step]:not([data-status=done]):not([data-status=skipped])"); n != 0 {
		t.Fatalf("%d steps are neither done nor skipped after success", n)
	}
	var progress string
	b.eval(`document.querySelector("[data-testid=job-progress]").getAttribute("aria-valuenow")`, &progress)
	if progress != "100" {
		t.Fatalf("progress after success: %s%%", progress)
	}
	if n := b.count("[data-testid=step-wait]"); n != 0 {
		t.Fatal("no step waits once the job is done")
	}
	b.expectWizardStates("done", "done", "pending", "pending", "pending", "pending", "pending")
	b.expectLogCollapses()
	b.checkFeel("setup")
	b.shot("setup-done")

	// The setup page still shows the history after the fact.
	b.open(setupURL, "[data-testid=job-status][data-status=succeeded]")

	// Step 3, the Knative Operator.
	b.click("[data-testid=job-next]")
	b.visible("[data-testid=wizard-step-3]", shortWait)
	regionID := regexp.MustCompile(`^/regions/([^/]+)/wizard`).FindStringSubmatch(b.path())
	if regionID == nil {
		b.fatalf("Continue must lead to the region's wizard, got %s", b.path())
	}
	b.expectReadOnly("[data-testid=step1-done]")
	b.expectReadOnly("[data-testid=step2-done]")
	b.expectWizardStates("done", "done", "current", "pending", "*", "pending", "pending")
	b.checkLabels("wizard step 3")
	b.runWizardStep("[data-testid=install-operator]", 3)

	// Step 4, Knative Serving with Traefik and the observability stack.
	b.click("[data-testid=job-next]")
	b.visible("[data-testid=wizard-step-4]", shortWait)
	b.expectReadOnly("[data-testid=step3-done]")
	b.expectWizardStates("done", "done", "done", "current", "*", "pending", "pending")
	b.runWizardStep("[data-testid=install-serving]", 4)
	// The waits were named live, Traefik's among them. (Its LoadBalancer address is
	// already there when the install asks for it on a simulated cluster, so that wait
	// is skipped: a wait whose condition holds names nothing.)
	var waits string
	b.eval(`window.__e2e.waits.join("\n")`, &waits)
	if !regexp.MustCompile(`(?m)^waiting for Deployment knative-serving/traefik to be ready \(\d+ (s|min)\)$`).MatchString(waits) {
		t.Fatalf("the Serving install must name its wait for Traefik live; it named:\n%s", waits)
	}

	// Step 5, Redis: the setup queued the managed Redis; the wizard shows it (or, done
	// already, step 6).
	b.click("[data-testid=job-next]")
	b.waitJS("step 5 or 6", `document.querySelector("[data-testid=wizard-step-5]") || document.querySelector("[data-testid=wizard-step-6]")`, shortWait)
	if b.count("[data-testid=wizard-step-5]") == 1 {
		b.expectReadOnly("[data-testid=step4-done]")
		b.expectWizardStates("done", "done", "done", "done", "current", "pending", "pending")
		b.waitJS("the managed Redis", `document.querySelector("[data-testid=job-status][data-status=succeeded]")`, installWait)
		b.shot("step5")
		b.click("[data-testid=job-next]")
	}

	// Step 6, Isolation: each node with its evidence; gVisor installed live.
	b.visible("[data-testid=wizard-step-6]", shortWait)
	b.expectReadOnly("[data-testid=step5-done]")
	b.expectWizardStates("done", "done", "done", "done", "done", "current", "pending")
	b.checkLabels("wizard step 6")
	if got := b.text(`[data-testid=sandbox-node][data-node="worker-1"] [data-testid=node-kata]`); !strings.Contains(got, "not probed") {
		b.fatalf("before the probe, Kata's eligibility waits for it: %q", got)
	}
	if b.count("[data-testid=action-remove-kata]")+b.count("[data-testid=sandbox-settings]") != 0 {
		b.fatalf("the wizard's Sandbox step offers installs only")
	}
	b.runWizardStep("[data-testid=install-gvisor]", 6)
	if got := b.text("[data-testid=wizard-step-6] [data-testid=runtime-gvisor] [data-testid=runtime-classes]"); got != "gvisor" {
		b.fatalf("gVisor's RuntimeClass: %q", got)
	}

	// Step 7, Migration: the steps before it are read-only; Finish closes the wizard.
	b.click("[data-testid=job-next]")
	b.visible("[data-testid=wizard-step-7]", shortWait)
	b.expectReadOnly("[data-testid=step6-done]")
	b.expectWizardStates("done", "done", "done", "done", "done", "done", "current")
	b.checkLabels("wizard step 7")
	if got := b.text("[data-testid=wizard-move-optional]"); !strings.Contains(got, "optional") {
		b.fatalf("step 7 must say that moving is optional: %q", got)
	}
	b.shot("step7")
	b.click("[data-testid=wizard-finish]")
	b.visible("[data-testid=region-name]", shortWait)
	if got := b.text("[data-testid=region-name]"); got != name {
		t.Fatalf("region page of %q", got)
	}
	// The jobs of the wizard were followed by status checks: the health says what they
	// installed (it said "Knative Serving is not installed" after Finish, or nothing yet).
	b.waitJS("the health checked after the installs", `(() => { const h = document.querySelector("[data-testid=health]");
		return h && !/not checked yet|Serving is not installed/i.test(h.textContent) })()`, shortWait)
	b.checkFeel("region")
	b.open("/regions", "[data-testid=regions-table]")
	row := b.text(fmt.Sprintf(`[data-testid=region-row][data-region=%q]`, name))
	if !strings.Contains(row, "ready") {
		t.Fatalf("the regions list must show the region ready: %q", row)
	}
	b.checkFeel("regions")
	b.shot("final")
	return regionID[1]
}

// runWizardStep installs one of the steps 3, 4 and 6 and watches its job to the end.
func (b *browser) runWizardStep(button string, step int) {
	b.t.Helper()
	b.watchBusy(button, "")
	b.submit(button)
	b.waitJS("the step's job", fmt.Sprintf(`location.pathname.endsWith("/wizard") && document.querySelector("[data-testid=wizard-step-%d] [data-testid=job]")`, step), shortWait)
	b.watchJob()
	b.mark()
	b.waitJS("the job to run live", `document.querySelector("[data-testid=job-step][data-status=running]") || document.querySelector("[data-testid=job-status][data-status=succeeded]")`, installWait)
	b.waitJS(fmt.Sprintf("step %d to succeed", step), `document.querySelector("[data-testid=job-status][data-status=succeeded]") || document.querySelector("[data-testid=job-status][data-status=failed]")`, installWait)
	if st := b.attr("[data-testid=job-status]", "data-status"); st != "succeeded" {
		b.fatalf("step %d: the job %s: %s", step, st, b.text("[data-testid=job-error]"))
	}
	b.visible("[data-testid=job-next]", shortWait)
	// The step's section is brought up to date in place: its install form is gone.
	b.waitJS("the step's section to refresh", fmt.Sprintf(`!document.querySelector("[data-testid=job-actions] [hx-trigger=load]") && !document.querySelector("[data-testid=wizard-step-%d] %s")`, step, strings.Replace(button, "]", "-form]", 1)), shortWait)
	b.visible("[data-testid=job-next]", shortWait)
	if !b.marked() {
		b.fatalf("step %d: the job's progress must arrive without a reload", step)
	}
	if b.count("[data-testid=wizard-skip]") != 0 {
		b.fatalf("step %d is done: it offers Continue, not Skip", step)
	}
	if b.count("[data-testid=wizard-next]") != 0 {
		b.fatalf("step %d is done: one way forward (the job's Continue), not also Next step", step)
	}
	states := []string{"done", "done", "pending", "pending", "*", "pending", "pending"}
	for i := 2; i < step; i++ {
		states[i] = "done"
	}
	states[step-1] = "done"
	b.expectWizardStates(states...)
	b.shot(fmt.Sprintf("step%d-done", step))
}

// regionPage is flow 4: request_timeout, maintenance and back, a function certificate.
func regionPage(t *testing.T, b *browser, c *console, regionID, name string) {
	ctx := context.Background()
	b.open("/regions/"+regionID, "[data-testid=settings-form]")
	if got := b.text("[data-testid=dns-instruction]"); !strings.Contains(got, "*.e2e-1.example.test") {
		t.Fatalf("the DNS instruction must name the function domain: %q", got)
	}

	// request_timeout out of range: the error beside the field, the value kept.
	b.typeInto("#f-request_timeout", "0")
	b.submit("[data-testid=save-settings]")
	b.visible("[data-testid=error-request_timeout]", shortWait)
	if got := b.value("#f-request_timeout"); got != "0" {
		t.Fatalf("request_timeout after a validation error: %q", got)
	}
	b.expectDescribedBy("#f-request_timeout", "err-request_timeout")

	// A good value: saved, and brought to the cluster by a job the tab shows live.
	b.typeInto("#f-request_timeout", "45")
	b.watchBusy("[data-testid=save-settings]", "")
	b.submit("[data-testid=save-settings]")
	b.expectBusy("Save settings")
	b.expectFlash("Settings saved")
	if got := b.value("#f-request_timeout"); got != "45" {
		t.Fatalf("request_timeout after saving: %q", got)
	}
	b.expectJobSucceeds("Apply the settings of " + name)
	// The job shows beside the settings it applies, above the rest of the General tab.
	var above bool
	b.eval(`(() => { const j = document.querySelector("[data-testid=job]"), f = document.querySelector("[data-testid=settings-form]");
		return !!(j && f && (j.compareDocumentPosition(f) & Node.DOCUMENT_POSITION_FOLLOWING)) })()`, &above)
	if !above {
		b.fatalf("the settings' job must show above the General tab's sections, not below the removal")
	}
	// The flash answered the save: another tab does not carry it.
	b.click("[data-testid=tab-registry]")
	b.waitJS("the Registry tab without the flash", `document.querySelector("#tab-registry[aria-selected=true]") && !document.querySelector("[data-testid=flash]")`, shortWait)
	b.click("[data-testid=tab-general]")
	b.visible("[data-testid=settings-form]", shortWait)
	if r, err := c.Store.RegionByID(ctx, regionID); err != nil || r.Settings.V.RequestTimeout != 45 {
		t.Fatalf("request_timeout in the database: %v %+v", err, r)
	}

	// Maintenance, and back to active.
	for _, st := range []string{"maintenance", "active"} {
		b.choose(fmt.Sprintf(`[data-testid=status-form] input[name=region_status][value=%s]`, st))
		b.submit("[data-testid=save-status]")
		b.expectFlash("Region status set to " + st + ".")
		if got := b.text("[data-testid=region-status]"); got != st {
			t.Fatalf("the region's status badge: %q, want %s", got, st)
		}
		b.expectJobSucceeds("Set the status of region " + name + " to " + st)
		if st == "maintenance" {
			b.shot("maintenance")
		}
	}

	// A certificate for another domain is refused beside the field; the certificate
	// stays in its field (the key, a secret, does not come back).
	wrongCert, wrongKey := selfSigned(t, "*.elsewhere.example.test")
	b.fill("#f-certificate", wrongCert, "#f-private_key", wrongKey)
	b.submit("[data-testid=upload-tls]")
	b.visible("[data-testid=error-certificate]", shortWait)
	if got := b.text("[data-testid=error-certificate]"); !strings.Contains(got, "do not cover *.e2e-1.example.test") {
		t.Fatalf("certificate error %q", got)
	}
	if got := b.value("#f-certificate"); strings.TrimSpace(got) != strings.TrimSpace(wrongCert) {
		t.Fatal("the certificate must stay in its field after a validation error")
	}

	// The right certificate: uploaded, installed by a job, then shown with its expiry.
	cert, key := selfSigned(t, "*."+name+".example.test")
	b.fill("#f-certificate", cert, "#f-private_key", key)
	b.submit("[data-testid=upload-tls]")
	b.expectFlash("Certificate uploaded")
	b.expectJobSucceeds("Function-domain certificate of " + name)
	b.open("/regions/"+regionID, "[data-testid=tls-expiry]")
	if got := b.text("[data-testid=tls-expiry]"); !strings.Contains(got, "*."+name+".example.test") || !strings.Contains(got, time.Now().AddDate(0, 0, 90).Format("2006-01-02")) {
		t.Fatalf("the certificate's line: %q", got)
	}

	// Removing it asks first, naming what happens; saying no keeps it.
	b.accept.Store(false)
	asked := len(b.dialogsSeen())
	b.click("[data-testid=action-remove-certificate]")
	b.waitFor("the confirmation", func() bool { return len(b.dialogsSeen()) > asked }, shortWait)
	if q := b.dialogsSeen()[asked]; !strings.Contains(q, "Remove the certificate?") || !strings.Contains(q, "default certificate") {
		t.Fatalf("the confirmation must say what happens: %q", q)
	}
	b.accept.Store(true)
	b.do(shortWait, "settle", chromedp.Sleep(500*time.Millisecond))
	if b.count("[data-testid=tls-expiry]") != 1 || b.count("[data-testid=flash]") != 0 {
		t.Fatal("a refused confirmation must change nothing")
	}
	if r, err := c.Store.RegionByID(ctx, regionID); err != nil || r.FunctionTLSExpiresAt == nil {
		t.Fatalf("the certificate must still be there: %v", err)
	}
	b.checkFeel("region-general")
	for _, tab := range []string{"registry", "operator", "serving", "redis"} {
		b.open("/regions/"+regionID+"?tab="+tab, "[data-testid=region-name]")
		b.expectDestructiveConfirms("region " + tab)
		b.checkLabels("region " + tab)
	}
	b.open("/regions/"+regionID, "[data-testid=tls-expiry]")
	b.expectDestructiveConfirms("region general")
	b.shot("final")
}

// viewer is flow 5: a Viewer sees the region, its jobs and the users, and has no control
// that changes anything; a forged POST is refused.
func viewer(t *testing.T, b *browser, c *console, regionID, name string) {
	b.login(viewerEmail, viewerPass)
	b.visible("[data-testid=regions-table]", shortWait)
	if got := b.text(fmt.Sprintf(`[data-testid=region-row][data-region=%q]`, name)); !strings.Contains(got, "ready") {
		t.Fatalf("the Viewer must see the region: %q", got)
	}
	b.expectNoChanges("regions")

	for _, tab := range []string{"general", "registry", "operator", "serving", "redis"} {
		b.open("/regions/"+regionID+"?tab="+tab, "[data-testid=region-name]")
		if got := b.text("[data-testid=region-name]"); got != name {
			t.Fatalf("%s tab: region %q", tab, got)
		}
		switch tab {
		case "general":
			if got := b.text("[data-testid=request-timeout]"); got != "45 s" {
				t.Fatalf("the Viewer must see request_timeout: %q", got)
			}
			if b.count("[data-testid=tls-expiry]") != 1 || b.count("[data-testid=dns-instruction]") != 1 {
				t.Fatal("the Viewer must see the certificate and the DNS record")
			}
		default:
			// Each tab shows its latest job, live, with its steps and log.
			b.visible("[data-testid=job] [data-testid=job-step]", shortWait)
			if b.count("[data-testid=log-line]") == 0 {
				t.Fatalf("%s tab: the Viewer must see the job's log", tab)
			}
		}
		b.expectNoChanges("region " + tab)
	}
	b.shot("region")

	// A job page: no Retry or Cancel.
	var jobID string
	b.open("/regions/"+regionID+"?tab=serving", "[data-testid=job]")
	b.eval(`document.querySelector("[data-testid=job]").dataset.jobId`, &jobID)
	b.open("/jobs/"+jobID, "[data-testid=job-status][data-status=succeeded]")
	b.expectNoChanges("job")

	b.open("/users", "[data-testid=user-row]")
	if n := b.count("[data-testid=user-row]"); n != 2 {
		t.Fatalf("the Viewer must see the users: %d rows", n)
	}
	b.expectNoChanges("users")
	b.open("/tokens", "h1")
	b.expectNoChanges("tokens")

	// What they may not open says so.
	b.open("/regions/new", "[data-testid=error-page]")
	if got := b.text("[data-testid=error-page]"); !strings.Contains(got, "403") || !strings.Contains(got, "regions.manage") {
		t.Fatalf("Add Region for a Viewer: %q", got)
	}

	// A forged POST with the page's CSRF token from the Viewer's session: 403, and
	// nothing changes.
	b.open("/regions/"+regionID, "[data-testid=region-name]")
	var status int
	b.eval(fmt.Sprintf(`(function(){
		var token = document.querySelector("meta[name=csrf-token]").content;
		return fetch("/regions/%s/status", {
			method: "POST",
			headers: {"X-CSRF-Token": token, "Content-Type": "application/x-www-form-urlencoded"},
			body: "region_status=inactive&_csrf=" + encodeURIComponent(token)
		}).then(function(r){ return r.status });
	})()`, regionID), &status)
	if status != 403 {
		t.Fatalf("a Viewer's forged POST: %d, want 403", status)
	}
	if r, err := c.Store.RegionByID(context.Background(), regionID); err != nil || r.Status != store.RegionActive {
		t.Fatalf("the forged POST must change nothing: %v %+v", err, r)
	}
	b.open("/regions/"+regionID, "[data-testid=region-name]")
	b.checkFeel("viewer-region")
	b.shot("final")
}

// expectNoChanges fails when the page offers the Viewer a control that changes
// something: a form that posts (signing out aside), an htmx write, a stray button.
func (b *browser) expectNoChanges(page string) {
	b.t.Helper()
	var found []string
	b.eval(`(function(){
		var out = [];
		document.querySelectorAll("form").forEach(function(f){
			if ((f.getAttribute("method") || "get").toLowerCase() === "get") return;
			if (f.getAttribute("action") === "/logout") return;
			out.push("form " + f.getAttribute("action"));
		});
		document.querySelectorAll("[hx-post],[hx-put],[hx-patch],[hx-delete]").forEach(function(e){ out.push("htmx " + e.outerHTML.slice(0, 100)) });
		document.querySelectorAll("button").forEach(function(e){
			var f = e.form;
			if (f && ((f.getAttribute("method") || "get").toLowerCase() === "get" || f.getAttribute("action") === "/logout")) return;
			if (!f) out.push("button " + e.textContent.trim());
		});
		return out;
	})()`, &found)
	if len(found) > 0 {
		b.fatalf("%s: a Viewer must have no control that changes anything, found:\n%s", page, strings.Join(found, "\n"))
	}
}

// expectDestructiveConfirms fails when a form with a danger button does not ask first
// (data-confirm), or asks without saying what happens.
func (b *browser) expectDestructiveConfirms(page string) {
	b.t.Helper()
	var bad []string
	b.eval(`(function(){
		var out = [];
		document.querySelectorAll("form button.bg-rose-600").forEach(function(btn){
			var q = btn.form.getAttribute("data-confirm") || "";
			if (q.indexOf("?") < 0 || q.split(" ").length < 6) out.push(btn.textContent.trim() + ": " + JSON.stringify(q));
		});
		return out;
	})()`, &bad)
	if len(bad) > 0 {
		b.fatalf("%s: destructive buttons must confirm, saying what happens:\n%s", page, strings.Join(bad, "\n"))
	}
}

// expectFlash fails unless the page's flash message says msg.
func (b *browser) expectFlash(msg string) {
	b.t.Helper()
	// The page of the previous action may still show its flash while this one's page
	// loads: wait for the message (a page being replaced is read again).
	got := ""
	for deadline := time.Now().Add(shortWait); !strings.Contains(got, msg); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.fatalf("flash %q, want %q", got, msg)
		}
		_ = b.tryEval(`(function(){var e=document.querySelector("[data-testid=flash]");return e?e.innerText.trim():""})()`, &got)
	}
}

// expectJobSucceeds waits until the page's live job with this title succeeds.
func (b *browser) expectJobSucceeds(title string) {
	b.t.Helper()
	b.waitJS("the job "+title, fmt.Sprintf(`(function(){
		var j = document.querySelector("[data-testid=job]");
		return j && j.querySelector("h2").textContent.trim() === %q;
	})()`, title), shortWait)
	b.mark()
	b.waitJS("the job "+title+" to finish", `document.querySelector("[data-testid=job-status][data-status=succeeded], [data-testid=job-status][data-status=failed]")`, installWait)
	if st := b.attr("[data-testid=job-status]", "data-status"); st != "succeeded" {
		b.fatalf("the job %s %s: %s", title, st, b.text("[data-testid=job-error]"))
	}
	if !b.marked() {
		b.fatalf("the job %s must finish live, without a reload", title)
	}
	// Its tab (or wizard step) is fetched again once the job ended: a form filled before
	// that answer is in would be replaced by it (the keeping of edited forms follows the
	// input events a person's typing fires, not values set by the test).
	b.waitJS("the page after the job "+title, `!document.querySelector("[data-keep-edited][hx-trigger=load]")`, shortWait)
}

// selfSigned returns a PEM certificate and its key for name, valid for 90 days.
func selfSigned(t *testing.T, name string) (string, string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: name},
		DNSNames: []string{name}, NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(0, 0, 90),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}))
}
