package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"runr.dev/console/testcluster"
)

// realPathFigures are what realnode's TestFunctionThroughTheRegionsIngress measured
// (its realPathFigures, written where RUNR_REALPATH_FIGURES says).
type realPathFigures struct {
	ServingToFirstAnswer time.Duration `json:"serving_to_first_answer"`
	DeployToReady        time.Duration `json:"deploy_to_ready"`
	InstallWall          time.Duration `json:"install_wall"`
	InstallWaits         time.Duration `json:"install_waits"`
	UpgradeProbes        int           `json:"upgrade_probes"`
	UpgradeProbesFailed  int           `json:"upgrade_probes_failed"`
}

// helmBaselineFigures are what realnode's TestHelmBaselineOfTheRealPath measured: the same
// CRDs, charts, values and objects applied without the console on a fresh real cluster.
type helmBaselineFigures struct {
	FirstAnswer time.Duration `json:"first_answer"`
	Releases    []string      `json:"releases"`
}

// realPathTests are the tests that run the real data path and measure it, then its Helm
// baseline (from what the first captured).
const realPathTests = "^(TestFunctionThroughTheRegionsIngress|TestHelmBaselineOfTheRealPath)$"

// benchRealPath runs the real data path once (the real Knative Operator and Serving,
// Traefik and a function on a real node, through the console's API) and reports its times.
func benchRealPath(env *Env, rep *Report) error {
	sec := rep.section("6", "The real data path")
	id := sec.cmd("6", "RUNR_REALPATH_FIGURES=$FILE RUNR_TEST_DATABASE_URL=$PG go test -count=1 -run '"+realPathTests+"' ./realnode")
	if !testcluster.TraefikBuilt() || !testcluster.KnativeBuilt() {
		sec.note("Not measured: Traefik %s and Knative %s are not built on this machine (make test-real builds them).", testcluster.TraefikVersion, testcluster.KnativeRelease)
		return fmt.Errorf("the real data path needs Traefik and Knative built (make test-real)")
	}
	file := filepath.Join(env.LogDir, "realpath.json")
	cmd := exec.Command("go", "test", "-count=1", "-timeout", "40m", "-run", realPathTests, "-v", "./realnode")
	cmd.Env = append(os.Environ(), "RUNR_REALPATH_FIGURES="+file, "RUNR_TEST_DATABASE_URL="+env.AdminURL)
	out, err := os.Create(filepath.Join(env.LogDir, "realpath.log"))
	if err != nil {
		return err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	fmt.Printf("running the real data path (its log: %s)\n", out.Name())
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("the real data path test failed (%w): see %s", err, out.Name())
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("the real data path's figures: %w", err)
	}
	var f realPathFigures
	if err := json.Unmarshal(raw, &f); err != nil {
		return fmt.Errorf("the real data path's figures: %w", err)
	}
	var h helmBaselineFigures
	if raw, err = os.ReadFile(file + ".helm.json"); err == nil {
		err = json.Unmarshal(raw, &h)
	}
	if err != nil {
		return fmt.Errorf("the real data path's Helm baseline: %w", err)
	}
	rep.add("6", "install-knative POST → first 200 of a function", secs(f.ServingToFirstAnswer), id)
	rep.add("6", "the same CRDs, charts, values and objects without the console (Helm --wait, apply): first object → first 200", secs(h.FirstAnswer), id)
	rep.add("6", "install-knative POST → first 200 ÷ the same without the console", fmt.Sprintf("%.2f", float64(f.ServingToFirstAnswer)/float64(h.FirstAnswer)), id)
	rep.add("6", "deploy POST → new revision ready and routed", secs(f.DeployToReady), id)
	overhead := f.InstallWall - f.InstallWaits
	rep.add("6", "install-knative: console time outside named waits", fmt.Sprintf("%s of %s (%.0f%%)", secs(overhead), secs(f.InstallWall), 100*float64(overhead)/float64(f.InstallWall)), id)
	rep.check("6", "function probes failed during an upgrade's reconcile", fmt.Sprintf("%d of %d", f.UpgradeProbesFailed, f.UpgradeProbes), "0", f.UpgradeProbesFailed == 0, id)
	sec.note("One run of realnode's %s on a cluster whose node is real (kubelet, containerd, runc; Traefik %s and Knative %s built from their Go modules, the knative-operator chart upstream's, every image from the cluster's registry through the console's image mirror). The first figure runs from the install-knative POST (operator and Serving) to the first 200 of a function the test deploys once Serving is ready, through Traefik's LoadBalancer address; it includes that deploy through the API.", realPathTests, testcluster.TraefikVersion, testcluster.KnativeRelease)
	sec.note("The baseline (TestHelmBaselineOfTheRealPath, right after, in the same go test): what install-knative made, read from the console's cluster once the function answered — its Helm releases (%s) with the values Helm stored, the KnativeServing and the function's Knative Service as they were — applied by hand on a fresh real cluster started the same way: the Knative Serving CRDs, `helm install --wait` of each release in the console's order (the Helm SDK), the KnativeServing (until Ready), the function's namespace and Knative Service (its image from the cluster's registry by digest instead of the region's registry through the node mirror), timed from the first object to the function's first 200 through the same address. It leaves out what the console does beside the data path (the project namespace's quota, the runr-agent, recording the region) and the console's own checks; the ratio is the console's whole path over Helm plus the cluster's readiness.", strings.Join(h.Releases, ", "))
	sec.note("The deploy figure is a redeploy of the function (a new revision) until Knative reports it ready and routed. The console-time figure is the install job's run minus the time some named wait of it was under way (parallel steps' waits counted once): what the console spends in Helm (rendering, applying, storing the release), in applying objects and between its checks. The probes call the function every second while `POST /api/reconcile` moves the agent and the console's helpers to a new version's image.")
	return nil
}
