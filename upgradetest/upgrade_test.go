package upgradetest

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	_ "github.com/lib/pq"

	"runr.dev/console/store/storetest"
	"runr.dev/console/testcluster"
)

// repo is the stand-in chart repository both versions install from.
var repo *testcluster.ChartRepo

func TestMain(m *testing.M) {
	if os.Getenv("RUNR_UPGRADE_TEST") == "" {
		fmt.Println("upgradetest: skipped (make upgrade-test runs it, with RUNR_UPGRADE_TEST=1)")
		os.Exit(0)
	}
	var err error
	if repo, err = testcluster.StartChartRepo(""); err != nil {
		fmt.Fprintln(os.Stderr, "upgradetest: chart repository:", err)
		os.Exit(1)
	}
	code := m.Run()
	repo.Close()
	os.Exit(code)
}

// seed is what the previous version created.
type seed struct {
	full, narrow     string // the tokens
	regionID, projID string
	kubeconfig       string // as the console hands it out
}

// request is one request whose status must not change with the upgrade.
type request struct{ token, method, path string }

func (s *seed) requests() map[string]request {
	return map[string]request{
		"full: region":            {s.full, "GET", "/api/knative-regions/" + s.regionID},
		"full: project":           {s.full, "GET", "/api/projects/" + s.projID},
		"full: users":             {s.full, "GET", "/api/users"},
		"full: kubeconfig":        {s.full, "GET", "/api/knative-regions/" + s.regionID + "/kubeconfig"},
		"narrow: projects":        {s.narrow, "GET", "/api/projects"},
		"narrow: project":         {s.narrow, "GET", "/api/projects/" + s.projID},
		"narrow: regions":         {s.narrow, "GET", "/api/knative-regions"},
		"narrow: users":           {s.narrow, "GET", "/api/users"},
		"narrow: deploy":          {s.narrow, "POST", "/api/projects/" + s.projID + "/deploy"},
		"narrow: create a region": {s.narrow, "POST", "/api/knative-regions"},
	}
}

// statuses sends every request and returns its status.
func statuses(c *console, s *seed) map[string]int {
	out := map[string]int{}
	for name, r := range s.requests() {
		var body any
		if r.method == "POST" {
			body = map[string]any{}
		}
		out[name] = c.api(r.method, r.path, r.token, body, nil)
	}
	return out
}

// createData creates, through the previous version's API, an owner and a second user, a
// region on a simulated cluster with its registry and Serving, a project with env and
// secret env, a full-access and a narrow token.
func createData(t *testing.T, old *console, cl *testcluster.Cluster) *seed {
	old.run("user", "create", "--email", "owner@example.com", "--role", "owner", "--password", "correct horse battery")
	s := &seed{full: old.run("token", "create", "--email", "owner@example.com", "--name", "full", "--scopes", "*")}
	must := func(want int, method, path string, body, out any) {
		t.Helper()
		if st := old.api(method, path, s.full, body, out); st != want {
			t.Fatalf("%s %s: %d, want %d (%+v)", method, path, st, want, out)
		}
	}
	must(200, "PATCH", "/api/settings", map[string]any{"base_domain": "example.test"}, nil)
	must(201, "POST", "/api/users", map[string]any{"email": "admin@example.com", "role": "admin", "password": "another horse battery"}, nil)
	var region struct {
		Data struct{ ID string }
		Jobs map[string]string
	}
	// v0.1.0 cannot install loki-stack 2.10.2 on Kubernetes 1.25 or later: its values set
	// loki.podDisruptionBudget, which loki 2.16.0 renders as policy/v1beta1 (issue 31). The
	// region uses an existing in-cluster Loki (a Service name, never called by an install) so the
	// previous release's install completes as it would for an administrator who has one.
	must(201, "POST", "/api/knative-regions", map[string]any{"name": "eu-2", "kubeconfig": string(cl.Kubeconfig()), "redis_mode": "none",
		"loki_url":      "http://loki.logging.svc:3100",
		"registry_mode": "internal", "registry_storage_type": "pvc", "registry_storage_config": map[string]any{"storageClass": "standard", "size": "5Gi"}}, &region)
	s.regionID = region.Data.ID
	for _, id := range region.Jobs {
		old.waitJob(s.full, id)
	}
	var job struct {
		JobID string `json:"job_id"`
	}
	must(202, "POST", "/api/knative-regions/"+s.regionID+"/install-knative", nil, &job)
	old.waitJob(s.full, job.JobID)
	var proj struct{ Data struct{ ID string } }
	must(201, "POST", "/api/projects", map[string]any{"name": "shop", "region_id": s.regionID, "image": "ghcr.io/acme/shop:1",
		"env_vars": map[string]string{"GREETING": "hello"}, "secret_env_vars": map[string]string{"API_TOKEN": "s3cr3t-value"}}, &proj)
	s.projID = proj.Data.ID
	var tok struct{ Token string }
	must(201, "POST", "/api/tokens", map[string]any{"name": "narrow", "scopes": []string{"projects.view"}}, &tok)
	s.narrow = tok.Token
	_, raw, err := call("http://"+old.addr, "GET", "/api/knative-regions/"+s.regionID+"/kubeconfig", s.full, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.kubeconfig = string(raw)
	return s
}

// volatile are the columns that using the console changes (a token's last use, a status
// check's results); every other column of every row must survive the upgrade as it was.
var volatile = map[string]map[string]bool{
	"users":      {"last_login_at": true},
	"api_tokens": {"last_used_at": true},
	"regions": {"health": true, "checked_at": true, "updated_at": true, "agent_last_seen_at": true, "dns_resolved": true,
		"components": true, "nodes": true, "k8s_version": true, "external_ip": true},
	// Sealed by the bootstrap's `runr secrets encrypt` (into env_vars_sealed); the env reads back the same.
	"projects": {"env_vars": true},
}

// snapshotTables are the tables whose rows the upgrade must keep.
var snapshotTables = []string{"users", "api_tokens", "settings", "regions", "projects", "registry_setups", "jobs", "job_steps"}

// snapshot reads every row of the tables as JSON, by table and primary key (the row's
// text when it has no id).
func snapshot(t *testing.T, dbURL string) map[string]map[string]map[string]any {
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]map[string]map[string]any{}
	for _, table := range snapshotTables {
		rows, err := db.Query(fmt.Sprintf(`SELECT to_jsonb(t)::text FROM %s t`, table))
		if err != nil {
			t.Fatalf("snapshot %s: %v", table, err)
		}
		out[table] = map[string]map[string]any{}
		for rows.Next() {
			var raw string
			if err := rows.Scan(&raw); err != nil {
				t.Fatal(err)
			}
			var row map[string]any
			_ = json.Unmarshal([]byte(raw), &row)
			key := fmt.Sprint(row["id"])
			if row["id"] == nil {
				key = fmt.Sprint(row["key"], row["job_id"], row["idx"])
			}
			out[table][key] = row
		}
		rows.Close()
	}
	return out
}

// compareRows checks that every row before is still there, every column (those the new
// version added aside) as it was.
func compareRows(t *testing.T, before, after map[string]map[string]map[string]any) int {
	t.Helper()
	n := 0
	for table, rows := range before {
		for key, row := range rows {
			now, ok := after[table][key]
			if !ok {
				t.Errorf("%s row %s is gone", table, key)
				continue
			}
			n++
			for col, v := range row {
				if !volatile[table][col] && !reflect.DeepEqual(v, now[col]) {
					t.Errorf("%s row %s column %s: %v → %v", table, key, col, v, now[col])
				}
			}
		}
	}
	return n
}

// TestUpgradeFromPreviousRelease: the previous release (a git tag, v0.1.0 first) creates
// data through its API; this checkout migrates the database while the previous version
// serves, starts, takes the traffic over and runs its bootstrap (first owner, reconcile),
// while a prober calls the API every 100 ms with both tokens. No probe may fail outside
// the switch-over window (from the migration's start until the previous version stopped);
// every row is intact, secrets are readable, both tokens keep their permissions and the
// region stays healthy.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	from := previousTag(t)
	start := time.Now()
	oldBin := buildTag(t, from)
	newBin, newVersion := buildCurrent(t)
	t.Logf("built %s and %s in %s", from, newVersion, time.Since(start).Round(time.Second))

	cl := testcluster.New(t, testcluster.Options{})
	dbURL := storetest.EmptyURL(t)
	env := append(os.Environ(), "DATABASE_URL="+dbURL, "RUNR_APP_KEY="+storetest.AppKey, "RUNR_CHART_MIRROR="+repo.URL,
		"RUNR_LOCAL_CLUSTER_HOST=127.0.0.2", "RUNR_ALLOW_LOOPBACK_CLUSTERS=true", "RUNR_STATUS_INTERVAL=1h",
		"RUNR_INSTALL_TIMEOUT=90s", "RUNR_STORAGE_TEST_TIMEOUT=4s", "RUNR_AGENT_WS_URL=ws://127.0.0.1:8080/api/internal/agent/ws")
	old := newConsole(t, oldBin, env)
	t.Logf("%s: %s", from, old.run("migrate"))
	old.serve()
	s := createData(t, old, cl)
	var v struct{ Version string }
	if old.api("GET", "/api/version", "", nil, &v); v.Version != from {
		t.Fatalf("the previous version reports %q", v.Version)
	}
	wantStatus := statuses(old, s)
	before := snapshot(t, dbURL)

	proxy := newSwitchProxy(t, old.addr)
	pr := startProber(proxy.srv.URL, probeChecks(s))
	time.Sleep(time.Second) // probes of the previous version alone

	// The upgrade, as the chart runs it: the migration Job while the previous version
	// serves, the new pod ready, the traffic moved, the old pod stopped, the bootstrap Job.
	neu := newConsole(t, newBin, env)
	windowStart := time.Now()
	migrated := neu.run("migrate")
	neu.serve()
	proxy.point(neu.addr)
	old.stop()
	windowEnd := time.Now()
	// The chart's bootstrap Job: what the previous version wrote in plain text sealed, the
	// first owner, reconcile.
	t.Logf("bootstrap: %s", neu.run("secrets", "encrypt"))
	neu.run("user", "bootstrap")
	t.Logf("bootstrap reconcile:\n%s", neu.run("reconcile"))
	time.Sleep(time.Second) // probes of the new version alone
	failures, count := pr.finish()

	window := windowEnd.Sub(windowStart)
	inWindow := 0
	for _, f := range failures {
		if f.At.Before(windowStart) || f.At.After(windowEnd) {
			t.Errorf("probe %s failed outside the switch-over window at %s: %s", f.What, f.At.Format("15:04:05.000"), f.Err)
		} else {
			inWindow++
		}
	}
	t.Logf("upgrade %s → %s: %s; switch-over window %s (migration, new console ready, traffic moved, old console stopped); "+
		"%d probes every 100 ms, %d failed inside the window, %d outside", from, newVersion, migrated, window.Round(time.Millisecond),
		count, inWindow, len(failures)-inWindow)

	checkAfter(t, neu, s, newVersion, wantStatus)
	rows := compareRows(t, before, snapshot(t, dbURL))
	t.Logf("%d rows of %s intact", rows, strings.Join(snapshotTables, ", "))
}

// probeChecks are the prober's requests: the full token reads the region and the project
// (with its env), the narrow token lists projects and is refused the regions.
func probeChecks(s *seed) []probeCheck {
	project := func(raw []byte) string {
		var p struct {
			Data struct {
				EnvVars       map[string]string `json:"env_vars"`
				SecretEnvVars []string          `json:"secret_env_vars"`
				SecretError   string            `json:"secret_error"`
			}
		}
		if err := json.Unmarshal(raw, &p); err != nil || p.Data.EnvVars["GREETING"] != "hello" || len(p.Data.SecretEnvVars) != 1 || p.Data.SecretError != "" {
			return "the project's env is not as created: " + string(raw)
		}
		return ""
	}
	return []probeCheck{
		{what: "full token: region", path: "/api/knative-regions/" + s.regionID, token: s.full, want: 200},
		{what: "full token: project", path: "/api/projects/" + s.projID, token: s.full, want: 200, body: project},
		{what: "narrow token: projects", path: "/api/projects", token: s.narrow, want: 200},
		{what: "narrow token: regions refused", path: "/api/knative-regions", token: s.narrow, want: 403},
	}
}

// checkAfter checks the new version: its version, no migration pending, the same
// answers to both tokens, secrets readable, nothing left in plain text, the region healthy.
func checkAfter(t *testing.T, neu *console, s *seed, version string, want map[string]int) {
	t.Helper()
	var v struct{ Version string }
	if neu.api("GET", "/api/version", "", nil, &v); v.Version != version {
		t.Errorf("/api/version: %q, want %q", v.Version, version)
	}
	if out := neu.run("migrate"); out != "Applied 0 migration(s)" {
		t.Errorf("migrations pending after the upgrade: %s", out)
	}
	got := statuses(neu, s)
	var names []string
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if got[name] != want[name] {
			t.Errorf("%s: %d before the upgrade, %d after", name, want[name], got[name])
		}
	}
	if _, raw, _ := call("http://"+neu.addr, "GET", "/api/knative-regions/"+s.regionID+"/kubeconfig", s.full, nil); string(raw) != s.kubeconfig {
		t.Error("the region's kubeconfig (a secret) does not read back as it was")
	}
	if out := neu.run("secrets", "encrypt"); out != "Encrypted 0 plaintext value(s)" {
		t.Errorf("secrets encrypt: %s", out)
	}
	checkRegionHealthy(t, neu, s)
}

// checkRegionHealthy asks the new version for a status check and reads its verdict.
func checkRegionHealthy(t *testing.T, neu *console, s *seed) {
	t.Helper()
	asked := time.Now()
	if st := neu.api("POST", "/api/knative-regions/"+s.regionID+"/check-status", s.full, nil, nil); st != 202 {
		t.Fatalf("check-status: %d", st)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var r struct {
			Data struct {
				SecretError    string     `json:"secret_error"`
				ServingStatus  string     `json:"serving_status"`
				RegistryStatus string     `json:"registry_status"`
				CheckedAt      *time.Time `json:"checked_at"`
				Health         struct {
					API, Components struct{ State, Reason string }
				}
			}
		}
		neu.api("GET", "/api/knative-regions/"+s.regionID, s.full, nil, &r)
		d := r.Data
		if d.CheckedAt != nil && d.CheckedAt.After(asked) {
			if d.SecretError != "" || d.ServingStatus != "ready" || d.RegistryStatus != "ready" || d.Health.API.State != "ok" || d.Health.Components.State == "down" {
				t.Errorf("the region after the upgrade: %+v", d)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new version did not check the region: %+v", d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
