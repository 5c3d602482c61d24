// Command sandbox builds the simulated cluster's binaries and runs a sandbox cluster
// with the stand-in chart repository, for `make sandbox`:
//
//	sandbox build [--data-path]
//	                build the binaries (and the tests' SeaweedFS) into the user cache dir;
//	                --data-path also builds what a function's request passes through on a
//	                real node (Traefik, the Knative Operator and Serving, and the demo's
//	                Mailpit: make test-real)
//	sandbox start [--real-node]
//	                start the sandbox in the background and write .data/sandbox/{kubeconfig,env};
//	                --real-node adds a real node (realnode.md) that runs the console's images
//	                of this checkout
//	sandbox stop    stop it
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"runr.dev/console/config"
	"runr.dev/console/images"
	"runr.dev/console/testcluster"
)

const dir = ".data/sandbox"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sandbox build|start|stop|reset")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = build(len(os.Args) > 2 && os.Args[2] == "--data-path")
	case "start":
		err = start(len(os.Args) > 2 && os.Args[2] == "--real-node")
	case "serve":
		err = serve(len(os.Args) > 2 && os.Args[2] == "--real-node")
	case "stop":
		err = stop()
	case "reset":
		err = reset()
	default:
		err = fmt.Errorf("unknown command %s", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		os.Exit(1)
	}
}

// build builds the simulated cluster's binaries, the real node's (realnode.md) and the
// tests' SeaweedFS, once each into the user cache dir; with dataPath, Traefik and Knative too.
func build(dataPath bool) error {
	b, err := testcluster.Build(os.Stderr)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "simulated cluster binaries ready in", b.Dir)
	if _, err := testcluster.BuildRealNode(os.Stderr); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "real-node binaries ready in", b.Dir)
	// The tests' external S3 endpoint (a real SeaweedFS server).
	weed, err := testcluster.BuildSeaweedFS(os.Stderr)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "SeaweedFS ready at", weed)
	if !dataPath {
		sayWhatSkips()
		return nil
	}
	if _, err := testcluster.BuildTraefik(os.Stderr); err != nil {
		return err
	}
	if err := testcluster.BuildKnative(os.Stderr); err != nil {
		return err
	}
	// The demo's SMTP catcher (about a minute).
	if _, err := testcluster.BuildMailpit(os.Stderr); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "Traefik "+testcluster.TraefikVersion+", Knative "+testcluster.KnativeRelease+" and Mailpit "+testcluster.MailpitVersion+" ready")
	return nil
}

// sayWhatSkips names the tests `make test` will skip because Traefik or Knative is not
// built here (go test prints a passing package's skips only with -v).
func sayWhatSkips() {
	var missing []string
	if !testcluster.TraefikBuilt() {
		missing = append(missing, "Traefik "+testcluster.TraefikVersion)
	}
	if !testcluster.KnativeBuilt() {
		missing = append(missing, "Knative "+testcluster.KnativeRelease)
	}
	if len(missing) == 0 {
		return
	}
	fmt.Println("Not built on this machine: " + strings.Join(missing, " and ") + " (make test-real builds them, about 20 minutes once). " +
		"These tests skip or leave out what needs them:\n" +
		"  realnode TestFunctionThroughTheRegionsIngress (skipped)\n" +
		"  realnode TestConsoleProgramsOnARealNode/TraefikRoutesTheBlock (skipped without Traefik)\n" +
		"  deploy TestChartInstallAndUpgrade (the function prober during the upgrade is left out)")
}

func pidFile() string { return filepath.Join(dir, "sandbox.pid") }

// start builds if needed, then runs `sandbox serve` detached and waits for its files.
func start(realNode bool) error {
	if pid, ok := running(); ok {
		return fmt.Errorf("a sandbox runs already (pid %d): `make sandbox-stop` first", pid)
	}
	if _, err := testcluster.Build(os.Stderr); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	os.Remove(filepath.Join(dir, "env"))
	logf, err := os.Create(filepath.Join(dir, "sandbox.log"))
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"serve"}
	if realNode {
		if _, err := testcluster.BuildRealNode(os.Stderr); err != nil {
			return err
		}
		args = append(args, "--real-node")
	}
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := os.WriteFile(pidFile(), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(dir, "env")); err == nil {
			abs, _ := filepath.Abs(dir)
			nodes := "1 control-plane node, 2 workers"
			kept := "It keeps its cluster, data and ports across `make sandbox-stop` and `make sandbox`\n(a running console and its regions keep working); `make sandbox-reset` starts over.\n\n"
			if realNode {
				kept = "A sandbox with a real node starts anew each time.\n\n"
				nodes += ", 1 real node (its pods run the console's images of this checkout; a console on :8080 is reached from it at " + testcluster.NodeIP + ":8080)"
			}
			fmt.Printf(`
The sandbox runs: %[2]s, and a chart mirror.

  kubeconfig (cluster-admin):  %[1]s/kubeconfig
  kubeconfig (read-only):      %[1]s/kubeconfig-limited
  settings for the console:    %[1]s/env

%[3]sUse it with the console:

  set -a; . %[1]s/env; set +a
  make run

then add a region in the browser with the content of %[1]s/kubeconfig.
Stop it with: make sandbox-stop   (log: %[1]s/sandbox.log)
`, abs, nodes, kept)
			return nil
		}
		if _, ok := running(); !ok {
			raw, _ := os.ReadFile(filepath.Join(dir, "sandbox.log"))
			return fmt.Errorf("the sandbox stopped while starting:\n%s", raw)
		}
		time.Sleep(300 * time.Millisecond)
	}
	return errors.New("the sandbox did not start within 3 minutes; see " + filepath.Join(dir, "sandbox.log"))
}

// imageVersion tags the console's images of this checkout in a real-node sandbox.
const imageVersion = "sandbox"

// Where the sandbox keeps its cluster and its chart mirror's address across restarts
// (a real-node sandbox is started anew each time).
var (
	keptCluster = filepath.Join(dir, "cluster")
	mirrorAddr  = filepath.Join(dir, "chart-mirror.addr")
)

// serve runs the cluster and the chart repository until SIGTERM. A simulated sandbox
// comes back as it was stopped: the same cluster, data, ports and mirror address, so a
// running console and the regions it registered keep working.
func serve(realNode bool) error {
	opts := testcluster.Options{LBAddress: "127.0.0.50", RealNode: realNode, Log: func(f string, a ...any) { fmt.Printf(f+"\n", a...) }}
	addr := ""
	if !realNode {
		opts.StateDir = keptCluster
		if raw, err := os.ReadFile(mirrorAddr); err == nil {
			addr = strings.TrimSpace(string(raw))
		}
	}
	repo, err := testcluster.StartChartRepoAt("", addr)
	if err != nil {
		return err
	}
	defer repo.Close()
	if !realNode {
		if err := os.WriteFile(mirrorAddr, []byte(strings.TrimPrefix(repo.URL, "http://")), 0o644); err != nil {
			return err
		}
	}
	c, err := testcluster.Start(opts)
	if err != nil {
		return err
	}
	defer c.Stop()
	var extra []string
	if realNode {
		if extra, err = realNodeSettings(c); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "kubeconfig"), c.Kubeconfig(), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "kubeconfig-limited"), c.LimitedKubeconfig(), 0o600); err != nil {
		return err
	}
	env := strings.Join(append([]string{
		"RUNR_CHART_MIRROR=" + repo.URL,
		"RUNR_APP_URL=http://127.0.0.1:8080",
		"RUNR_LOCAL_CLUSTER_HOST=127.0.0.1",
		// The sandbox's cluster listens on 127.0.0.1: the console must be let to reach it.
		"RUNR_ALLOW_LOOPBACK_CLUSTERS=true",
	}, extra...), "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "env"), []byte(env), 0o644); err != nil {
		return err
	}
	fmt.Println("sandbox ready; chart mirror", repo.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	fmt.Println("sandbox stopping")
	return nil
}

// realNodeSettings puts the console's images of this checkout into the real node's
// registry and makes the console (on :8080) reachable from the node's pods; it returns the
// console's settings for them.
func realNodeSettings(c *testcluster.Cluster) ([]string, error) {
	fmt.Println("building the console's images of this checkout for the real node")
	built, err := testcluster.ConsoleImages(imageVersion)
	if err != nil {
		return nil, err
	}
	if err := c.PushImages(context.Background(), built); err != nil {
		return nil, err
	}
	inside, err := c.Expose("127.0.0.1:8080", 8080)
	if err != nil {
		return nil, err
	}
	agent := config.OwnImage(images.Agent, imageVersion)
	return []string{
		"RUNR_AGENT_IMAGE=" + agent,
		"RUNR_RESPONDER_IMAGE=" + agent,
		"RUNR_AGENT_WS_URL=ws://" + inside,
		// The real node pulls only what its registry holds: the pre-pull takes the pause image.
		"RUNR_PREPULL_IMAGES=" + testcluster.PauseImage,
	}, nil
}

func running() (int, bool) {
	raw, err := os.ReadFile(pidFile())
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return 0, false
	}
	return pid, syscall.Kill(pid, 0) == nil
}

// reset removes the kept cluster and the mirror's address: the next start is a new
// cluster on new ports.
func reset() error {
	if pid, ok := running(); ok {
		return fmt.Errorf("a sandbox runs (pid %d): `make sandbox-stop` first", pid)
	}
	if err := os.RemoveAll(keptCluster); err != nil {
		return err
	}
	for _, f := range []string{mirrorAddr, filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "kubeconfig-limited")} {
		os.Remove(f)
	}
	fmt.Println("sandbox reset: the next `make sandbox` starts a new cluster")
	return nil
}

func stop() error {
	pid, ok := running()
	if !ok {
		fmt.Println("no sandbox is running")
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	for i := 0; i < 100; i++ {
		if syscall.Kill(pid, 0) != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	os.Remove(pidFile())
	os.Remove(filepath.Join(dir, "env"))
	fmt.Println("sandbox stopped")
	return nil
}
