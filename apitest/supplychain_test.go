package apitest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/ops/admission"
	"runr.dev/console/store"
	"runr.dev/console/supplychain"
	"runr.dev/console/supplychain/sigtest"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
)

var cipGVR = schema.GroupVersionResource{Group: "policy.sigstore.dev", Version: "v1beta1", Resource: "clusterimagepolicies"}

// supplyChainState is GET /api/knative-regions/{id}/supply-chain.
type supplyChainState struct {
	PublicKeys   []struct{ ID, PEM string } `json:"public_keys"`
	RequireSBOM  bool                       `json:"require_sbom"`
	RequireScan  bool                       `json:"require_scan"`
	FailSeverity string                     `json:"fail_severity"`
	DataLocation string                     `json:"data_location"`
	Admission    struct {
		Enabled      bool                  `json:"enabled"`
		Mode         store.AdmissionMode   `json:"mode"`
		Images       []string              `json:"images"`
		Status       store.ComponentStatus `json:"status"`
		SystemImages []string              `json:"system_images"`
	} `json:"admission"`
	Verdicts []verdictJSON `json:"verdicts"`
	JobID    string        `json:"job_id"`
	Fields   map[string]string
	Error    string
}

// verdictJSON is a verdict as the API answers it.
type verdictJSON struct {
	Project string               `json:"project"`
	Image   string               `json:"image"`
	Digest  string               `json:"digest"`
	Verdict store.VerdictOutcome `json:"verdict"`
	Reason  string               `json:"reason"`
	Detail  store.VerdictDetail  `json:"detail"`
}

func getSupplyChain(t *testing.T, e *webtest.Env, tok, id string) supplyChainState {
	t.Helper()
	var s supplyChainState
	if st := e.JSON("GET", "/api/knative-regions/"+id+"/supply-chain", tok, nil, &s); st != 200 {
		t.Fatalf("GET supply-chain: %d", st)
	}
	return s
}

// putSupplyChain sends the settings and waits for the admission job it queued, if any.
func putSupplyChain(t *testing.T, e *webtest.Env, tok, id string, body map[string]any) supplyChainState {
	t.Helper()
	var s supplyChainState
	if st := e.JSON("PUT", "/api/knative-regions/"+id+"/supply-chain", tok, body, &s); st != 200 {
		t.Fatalf("PUT supply-chain %v: %d %+v", body, st, s)
	}
	if s.JobID != "" {
		mustSucceed(t, e.WaitJob(s.JobID, 3*time.Minute))
	}
	return s
}

func TestSupplyChainSettingsValidation(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	key := sigtest.NewKey(t)

	// A data location is checked at creation too.
	var ref struct{ Fields map[string]string }
	body := map[string]any{"name": "bad-loc", "kubeconfig": string(c.Kubeconfig()), "redis_mode": "none", "data_location": "eu/central"}
	if st := e.JSON("POST", "/api/knative-regions", tok, body, &ref); st != 422 || ref.Fields["data_location"] == "" {
		t.Fatalf("a bad data location at creation: %d %+v", st, ref)
	}
	r := newRegion(t, e, tok, c, "sc", map[string]any{"data_location": "eu-central"})

	s := getSupplyChain(t, e, tok, r.ID)
	if s.DataLocation != "eu-central" || s.FailSeverity != "critical" || s.Admission.Mode != store.AdmissionEnforce || s.Admission.Status != store.ComponentNotInstalled ||
		s.Admission.Enabled || len(s.PublicKeys) != 0 || !slices.Equal(s.Admission.SystemImages, admission.SystemImages) {
		t.Fatalf("defaults: %+v", s)
	}

	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"public_keys": []string{"not a key"}}, "public_keys"},
		{map[string]any{"public_keys": []string{"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----"}}, "public_keys"},
		{map[string]any{"require_sbom": true}, "public_keys"},
		{map[string]any{"admission": true, "admission_images": []string{"registry.example.com/**"}}, "public_keys"},
		{map[string]any{"public_keys": []string{key.PublicPEM}, "admission": true, "admission_images": []string{"**"}}, "admission_images"},
		{map[string]any{"public_keys": []string{key.PublicPEM}, "admission_mode": "audit"}, "admission_mode"},
		{map[string]any{"public_keys": []string{key.PublicPEM}, "fail_severity": "severe"}, "fail_severity"},
		{map[string]any{"public_keys": []string{key.PublicPEM}, "data_location": "-eu"}, "data_location"},
		{map[string]any{"public_keys": []string{key.PublicPEM}, "data_location": strings.Repeat("e", 65)}, "data_location"},
		{map[string]any{"public_keys": "one"}, "body"},
	} {
		var ans supplyChainState
		if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/supply-chain", tok, tc.body, &ans); st != 422 || ans.Fields[tc.field] == "" {
			t.Fatalf("PUT %v: %d %+v, want 422 on %s", tc.body, st, ans, tc.field)
		}
	}
	// Nothing was stored by the refusals.
	if got := getSupplyChain(t, e, tok, r.ID); len(got.PublicKeys) != 0 || got.RequireSBOM || got.DataLocation != "eu-central" || got.Admission.Mode != store.AdmissionEnforce {
		t.Fatalf("a refused change stored something: %+v", got)
	}

	// A valid change; the public key is shown (it is public), nothing asks for a job.
	s = putSupplyChain(t, e, tok, r.ID, map[string]any{"public_keys": []string{key.PublicPEM}, "require_sbom": true, "require_scan": true,
		"fail_severity": "HIGH", "data_location": "EU Central 1"})
	if s.JobID != "" || len(s.PublicKeys) != 1 || s.PublicKeys[0].ID == "" || !strings.Contains(s.PublicKeys[0].PEM, "BEGIN PUBLIC KEY") ||
		!s.RequireSBOM || !s.RequireScan || s.FailSeverity != "high" || s.DataLocation != "EU Central 1" {
		t.Fatalf("after a valid change: %+v", s)
	}
	if r, _ = e.Store.RegionByID(context.Background(), r.ID); r.DataLocation != "EU Central 1" {
		t.Fatalf("the data location is the region's: %q", r.DataLocation)
	}
	// Another user without regions.supply_chain.manage is refused.
	_, viewer := e.User("viewer")
	if st := e.JSON("GET", "/api/knative-regions/"+r.ID+"/supply-chain", viewer, nil, nil); st != 403 {
		t.Fatalf("a viewer reads the supply chain: %d", st)
	}
}

// deployJob deploys a project and returns its job, however it ends.
func deployJob(t *testing.T, e *webtest.Env, tok, id string) *store.Job {
	t.Helper()
	var ans struct {
		JobID string `json:"job_id"`
		Error string
	}
	if st := e.JSON("POST", "/api/projects/"+id+"/deploy", tok, nil, &ans); st != 202 {
		t.Fatalf("deploy: %d %s", st, ans.Error)
	}
	return e.WaitJob(ans.JobID, 2*time.Minute)
}

func projectWithImage(t *testing.T, e *webtest.Env, tok, regionID, name, image string) string {
	t.Helper()
	var ans struct {
		Data   struct{ ID string }
		Fields map[string]string
	}
	if st := e.JSON("POST", "/api/projects", tok, map[string]any{"name": name, "region_id": regionID, "image": image}, &ans); st != 201 {
		t.Fatalf("create project %s: %d %+v", name, st, ans)
	}
	return ans.Data.ID
}

func TestSupplyChainDeployGate(t *testing.T) {
	c, e, tok, r := readyRegion(t, "gate")
	ctx := context.Background()
	reg := sigtest.NewRegistry(t)
	key, stranger := sigtest.NewKey(t), sigtest.NewKey(t)

	good, gd := reg.Push(t, "acme/shop:1.0")
	sigtest.Sign(t, key, good, gd)
	sigtest.Attest(t, key, good, gd, supplychain.PredicateCycloneDX, sigtest.CycloneDX("openssl", "zlib"))
	sigtest.Attest(t, key, good, gd, supplychain.PredicateVuln, sigtest.TrivyScan(map[string]string{"CVE-2026-0001": "MEDIUM"}))
	unsigned, _ := reg.Push(t, "acme/shop:unsigned")
	foreign, fd := reg.Push(t, "acme/shop:foreign")
	sigtest.Sign(t, stranger, foreign, fd)
	bare, bd := reg.Push(t, "acme/shop:bare")
	sigtest.Sign(t, key, bare, bd)
	critical, cd := reg.Push(t, "acme/shop:critical")
	sigtest.Sign(t, key, critical, cd)
	sigtest.Attest(t, key, critical, cd, supplychain.PredicateCycloneDX, sigtest.CycloneDX("openssl"))
	sigtest.Attest(t, key, critical, cd, supplychain.PredicateVuln, sigtest.TrivyScan(map[string]string{"CVE-2026-9999": "CRITICAL"}))

	// Without keys the gate does not look at images (a project of an unreachable registry deploys).
	free := projectWithImage(t, e, tok, r.ID, "free", "ghcr.io/acme/free:1")
	mustSucceed(t, deployJob(t, e, tok, free))

	putSupplyChain(t, e, tok, r.ID, map[string]any{"public_keys": []string{key.PublicPEM}, "require_sbom": true, "require_scan": true, "fail_severity": "high"})
	for _, tc := range []struct {
		name, image, reason string
	}{
		{"unsigned", unsigned, "no cosign signature"},
		{"foreign", foreign, "no signature of the image verifies with the region's keys"},
		{"bare", bare, "no SBOM attestation"},
		{"critical", critical, "CVE-2026-9999 (critical)"},
	} {
		id := projectWithImage(t, e, tok, r.ID, tc.name, tc.image)
		j := deployJob(t, e, tok, id)
		if j.Status != store.JobFailed || !strings.Contains(j.Error, tc.reason) {
			t.Fatalf("%s: %s %q, want refused with %q", tc.name, j.Status, j.Error, tc.reason)
		}
		p, _ := e.Store.ProjectByID(ctx, id)
		if !strings.Contains(p.Message, tc.reason) || p.State == store.ProjectRunning {
			t.Fatalf("%s: the project says why: %s %q", tc.name, p.State, p.Message)
		}
		if _, err := c.DynamicGet(ctx, ksvcGVR, "gate", p.Slug); err == nil {
			t.Fatalf("%s: a refused image must not reach the cluster", tc.name)
		}
	}
	shop := projectWithImage(t, e, tok, r.ID, "shop", good)
	mustSucceed(t, deployJob(t, e, tok, shop))
	if _, err := c.DynamicGet(ctx, ksvcGVR, "gate", "shop"); err != nil {
		t.Fatalf("the signed image runs: %v", err)
	}

	// Every verdict is recorded, with the reason of a refusal; the tab shows them.
	s := getSupplyChain(t, e, tok, r.ID)
	if len(s.Verdicts) != 5 {
		t.Fatalf("verdicts: %+v", s.Verdicts)
	}
	byProject := map[string]verdictJSON{}
	for _, v := range s.Verdicts {
		byProject[v.Project] = v
	}
	if v := byProject["shop"]; v.Verdict != store.VerdictAccepted || v.Digest != gd || v.Detail.SBOM != "CycloneDX 1.5, 2 components" || v.Detail.Findings["medium"] != 1 || v.Detail.SignedBy == "" {
		t.Fatalf("the accepted verdict: %+v", v)
	}
	if v := byProject["critical"]; v.Verdict != store.VerdictRefused || !strings.Contains(v.Reason, "1 finding(s) at or above high") {
		t.Fatalf("the refused verdict: %+v", v)
	}
	st, page := e.Raw("GET", "/regions/"+r.ID+"/tabs/supply-chain", tok, "")
	if st != 200 || !strings.Contains(page, `data-testid="verdict"`) || !strings.Contains(page, "no cosign signature") || !strings.Contains(page, "CVE-2026-9999") {
		t.Fatalf("the tab shows the verdicts: %d", st)
	}
	if strings.Contains(page, "PRIVATE") {
		t.Fatal("no private key material in the tab")
	}
}

// cip reads a ClusterImagePolicy (nil when missing).
func cip(t *testing.T, c *testcluster.Cluster, name string) *unstructured.Unstructured {
	t.Helper()
	o, err := c.DynamicGet(context.Background(), cipGVR, "", name)
	if err != nil {
		return nil
	}
	return o
}

// checkPolicies checks the ClusterImagePolicies in a cluster against a region's settings.
func checkPolicies(t *testing.T, c *testcluster.Cluster, region string, mode store.AdmissionMode, keyPEM string, images []string) {
	t.Helper()
	sys := cip(t, c, admission.SystemPolicyName)
	if sys == nil {
		t.Fatal("no system images policy")
	}
	var globs []string
	list, _, _ := unstructured.NestedSlice(sys.Object, "spec", "images")
	for _, im := range list {
		globs = append(globs, im.(map[string]any)["glob"].(string))
	}
	auths, _, _ := unstructured.NestedSlice(sys.Object, "spec", "authorities")
	if !slices.Equal(globs, []string{"ghcr.io/brf-tech/runr/**", "ghcr.io/brf-tech/**", "ghcr.io/runrsh/**"}) || len(auths) != 1 ||
		auths[0].(map[string]any)["static"].(map[string]any)["action"] != "pass" {
		t.Fatalf("the system images policy passes RunR's images: %v %v", globs, auths)
	}
	rp := cip(t, c, admission.RegionPolicyName(region))
	if rp == nil {
		t.Fatal("no region policy")
	}
	gotMode, _, _ := unstructured.NestedString(rp.Object, "spec", "mode")
	auths, _, _ = unstructured.NestedSlice(rp.Object, "spec", "authorities")
	list, _, _ = unstructured.NestedSlice(rp.Object, "spec", "images")
	globs = nil
	for _, im := range list {
		globs = append(globs, im.(map[string]any)["glob"].(string))
	}
	data, _, _ := unstructured.NestedString(auths[0].(map[string]any), "key", "data")
	if store.AdmissionMode(gotMode) != mode || len(auths) != 1 || data != strings.TrimSpace(keyPEM) || !slices.Equal(globs, images) {
		t.Fatalf("region policy: mode %s, %d authorities, images %v", gotMode, len(auths), globs)
	}
	ns, err := c.Client.CoreV1().Namespaces().Get(context.Background(), region, metav1.GetOptions{})
	if err != nil || ns.Labels[admission.PolicyIncludeLabel] != "true" {
		t.Fatalf("the project namespace opts in: %v %v", err, ns.Labels)
	}
	if _, err := c.Client.AppsV1().Deployments(admission.CosignNamespace).Get(context.Background(), "policy-controller-webhook", metav1.GetOptions{}); err != nil {
		t.Fatalf("the policy-controller runs in cosign-system: %v", err)
	}
}

func TestSupplyChainAdmissionPolicy(t *testing.T) {
	c, e, tok, r := readyRegion(t, "adm")
	ctx := context.Background()
	key := sigtest.NewKey(t)
	images := []string{"registry.example.com/acme/**"}

	s := putSupplyChain(t, e, tok, r.ID, map[string]any{"public_keys": []string{key.PublicPEM}, "admission": true,
		"admission_mode": "enforce", "admission_images": images})
	if s.JobID == "" {
		t.Fatal("turning the policy on queues its job")
	}
	checkPolicies(t, c, "adm", store.AdmissionEnforce, key.PublicPEM, images)
	if got := getSupplyChain(t, e, tok, r.ID); got.Admission.Status != store.ComponentReady || !got.Admission.Enabled {
		t.Fatalf("after the apply: %+v", got.Admission)
	}
	// The same settings again change nothing in the cluster; a new mode does.
	if again := putSupplyChain(t, e, tok, r.ID, map[string]any{"admission_mode": "enforce"}); again.JobID != "" {
		t.Fatal("nothing changed: no job")
	}
	putSupplyChain(t, e, tok, r.ID, map[string]any{"admission_mode": "warn"})
	checkPolicies(t, c, "adm", store.AdmissionWarn, key.PublicPEM, images)
	var ref supplyChainState
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/supply-chain", tok, map[string]any{"admission_images": []string{"ghcr.io/**"}}, &ref); st != 422 || ref.Fields["admission_images"] == "" {
		t.Fatalf("a glob over RunR's images: %d %+v", st, ref)
	}

	// DELETE removes the policy (and the controller, which nothing else uses); the settings stay.
	var del struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("DELETE", "/api/knative-regions/"+r.ID+"/supply-chain/admission", tok, nil, &del); st != 202 {
		t.Fatalf("DELETE admission: %d", st)
	}
	mustSucceed(t, e.WaitJob(del.JobID, 3*time.Minute))
	if cip(t, c, admission.RegionPolicyName("adm")) != nil || cip(t, c, admission.SystemPolicyName) != nil {
		t.Fatal("the policies are gone")
	}
	if _, err := c.APIExtGet(ctx, admission.CIPCRD); err == nil {
		t.Fatal("the policy-controller's release (and its CRD) is gone")
	}
	if ns, _ := c.Client.CoreV1().Namespaces().Get(ctx, "adm", metav1.GetOptions{}); ns.Labels[admission.PolicyIncludeLabel] != "" {
		t.Fatalf("the namespace no longer opts in: %v", ns.Labels)
	}
	got := getSupplyChain(t, e, tok, r.ID)
	if got.Admission.Enabled || got.Admission.Status != store.ComponentNotInstalled || got.Admission.Mode != store.AdmissionWarn || len(got.PublicKeys) != 1 ||
		!slices.Equal(got.Admission.Images, images) {
		t.Fatalf("the settings stay: %+v", got)
	}
	if st := e.JSON("DELETE", "/api/knative-regions/"+r.ID+"/supply-chain/admission", tok, nil, nil); st != 422 {
		t.Fatalf("nothing left to remove: %d", st)
	}
	// The removal page lists the policy among what to remove first.
	if _, page := e.Raw("GET", "/regions/"+r.ID+"/remove", tok, ""); !strings.Contains(page, "supply-chain/admission") || !strings.Contains(page, "cosign-system") {
		t.Fatal("the removal page names the admission policy and cosign-system")
	}
}

func TestSupplyChainDataResidency(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	eu := newRegion(t, e, tok, c, "eu-1", map[string]any{"data_location": "eu"})
	us := newRegion(t, e, tok, c, "us-1", nil)
	putSupplyChain(t, e, tok, us.ID, map[string]any{"data_location": "us"})

	create := func(region string) (int, map[string]string, string) {
		var ans struct {
			Data   struct{ ID string }
			Fields map[string]string
		}
		st := e.JSON("POST", "/api/projects", tok, map[string]any{"name": "ledger", "region_id": region, "image": "ghcr.io/acme/ledger:1", "data_location": "EU"}, &ans)
		return st, ans.Fields, ans.Data.ID
	}
	// Creation: only in a region of the project's data location.
	if st, f, _ := create(us.ID); st != 422 || !strings.Contains(f["region_id"], "requires data location EU") {
		t.Fatalf("created in another location: %d %v", st, f)
	}
	st, _, id := create(eu.ID)
	if st != 201 {
		t.Fatalf("created in its location: %d", st)
	}
	var p struct {
		Data struct {
			DataLocation string `json:"data_location"`
		}
	}
	e.JSON("GET", "/api/projects/"+id, tok, nil, &p)
	if p.Data.DataLocation != "EU" {
		t.Fatalf("the project's data location: %+v", p)
	}
	// A move of the project to another location is refused; the region cannot leave it.
	var ans struct{ Fields map[string]string }
	if st := e.JSON("PUT", "/api/projects/"+id, tok, map[string]any{"region_id": us.ID}, &ans); st != 422 || ans.Fields["region_id"] == "" {
		t.Fatalf("moved to another location: %d %v", st, ans)
	}
	if st := e.JSON("PUT", "/api/knative-regions/"+eu.ID+"/supply-chain", tok, map[string]any{"data_location": "us"}, &ans); st != 422 || !strings.Contains(ans.Fields["data_location"], "ledger") {
		t.Fatalf("the region left its projects' location: %d %v", st, ans)
	}
	// A deploy on a region of another location is refused (the rule is checked again at
	// every deploy, whatever changed the records since).
	e.Store.DB.Exec(`UPDATE projects SET data_location = 'us' WHERE id = $1`, id)
	var dep struct {
		Fields map[string]string
		Error  string
	}
	if st := e.JSON("POST", "/api/projects/"+id+"/deploy", tok, nil, &dep); st != 422 || !strings.Contains(dep.Fields["data_location"]+dep.Error, "requires data location us") {
		t.Fatalf("deployed in another location: %d %+v", st, dep)
	}
	// The region's move stays within its location, by the same rule.
	if st := e.JSON("POST", "/api/knative-regions/"+eu.ID+"/migrate", tok, map[string]any{"kubeconfig": string(c.Kubeconfig()), "data_location": "us"}, &ans); st != 422 || ans.Fields["data_location"] == "" {
		t.Fatalf("a move out of the location: %d %v", st, ans)
	}
}

func TestSupplyChainMoveReappliesPolicy(t *testing.T) {
	a, e, tok, r := readyRegion(t, "mvp")
	b := testcluster.New(t, testcluster.Options{})
	key := sigtest.NewKey(t)
	images := []string{"registry.example.com/acme/**"}
	putSupplyChain(t, e, tok, r.ID, map[string]any{"public_keys": []string{key.PublicPEM}, "admission": true, "admission_images": images})
	checkPolicies(t, a, "mvp", store.AdmissionEnforce, key.PublicPEM, images)

	mustSucceed(t, migrate(t, e, tok, r.ID, b.Kubeconfig(), nil))
	checkPolicies(t, b, "mvp", store.AdmissionEnforce, key.PublicPEM, images)
	r, _ = e.Store.RegionByID(context.Background(), r.ID)
	for _, s := range r.MigrationDetail.V.Steps {
		if s.Name == "admission policy" {
			t.Fatalf("the policy failed on the new cluster: %+v", s)
		}
	}
	if st := r.SupplyChain.V.State; st.Status != store.ComponentReady {
		t.Fatalf("the policy's state after the move: %+v", st)
	}
}

// TestAdmissionPolicySharedOnOneCluster: two regions of one cluster share its
// policy-controller, each with a policy of its own. Tearing one region down takes its policy
// and leaves the controller and the other's policy working; the last policy's removal takes
// the controller too.
func TestAdmissionPolicySharedOnOneCluster(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	ctx := context.Background()
	key := sigtest.NewKey(t)
	images := []string{"registry.example.com/acme/**"}
	regions := map[string]*store.Region{}
	for _, name := range []string{"first", "second"} {
		r := newRegion(t, e, tok, c, name, nil)
		mustSucceed(t, action(t, e, tok, r.ID, "install-knative", nil))
		putSupplyChain(t, e, tok, r.ID, map[string]any{"public_keys": []string{key.PublicPEM}, "admission": true,
			"admission_mode": "enforce", "admission_images": images})
		regions[name] = r
	}
	checkPolicies(t, c, "first", store.AdmissionEnforce, key.PublicPEM, images)
	checkPolicies(t, c, "second", store.AdmissionEnforce, key.PublicPEM, images)

	var ans struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("DELETE", "/api/knative-regions/"+regions["first"].ID+"?teardown=true", tok, nil, &ans); st != 202 {
		t.Fatalf("teardown of first: %d", st)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 4*time.Minute))
	if cip(t, c, admission.RegionPolicyName("first")) != nil {
		t.Fatal("first's policy must go with first")
	}
	if _, err := c.APIExtGet(ctx, admission.CIPCRD); err != nil {
		t.Fatalf("the policy-controller went with first although second's policy uses it: %v", err)
	}
	checkPolicies(t, c, "second", store.AdmissionEnforce, key.PublicPEM, images)
	if got := getSupplyChain(t, e, tok, regions["second"].ID); got.Admission.Status != store.ComponentReady || !got.Admission.Enabled {
		t.Fatalf("second's admission after first's teardown: %+v", got.Admission)
	}

	if st := e.JSON("DELETE", "/api/knative-regions/"+regions["second"].ID+"/supply-chain/admission", tok, nil, &ans); st != 202 {
		t.Fatalf("DELETE admission of second: %d", st)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 3*time.Minute))
	if cip(t, c, admission.RegionPolicyName("second")) != nil || cip(t, c, admission.SystemPolicyName) != nil {
		t.Fatal("the last region's policies must be gone")
	}
	if _, err := c.APIExtGet(ctx, admission.CIPCRD); err == nil {
		t.Fatal("the policy-controller must go with the cluster's last policy")
	}
}
