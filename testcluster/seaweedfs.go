package testcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// SeaweedFSVersion is the SeaweedFS module whose weed server the tests run as an external
// S3 endpoint with the IAM API (its S3 gateway embeds IAM). It is the real server, built
// from its Go module like the cluster's binaries.
const SeaweedFSVersion = "v0.0.0-20261109003541-7506e5f91cd6"

var (
	weedOnce sync.Once
	weedPath string
	weedErr  error
)

// BuildSeaweedFS builds weed once into the cache dir (about 10 minutes the first time)
// and returns its path. Its module's go.mod has replace directives, which `go install
// module@version` refuses, so it is built as the main module from a copy of its source.
func BuildSeaweedFS(log io.Writer) (string, error) {
	weedOnce.Do(func() { weedPath, weedErr = buildSeaweedFS(log) })
	return weedPath, weedErr
}

func buildSeaweedFS(log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	k8s, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(k8s), "seaweedfs-"+SeaweedFSVersion)
	out := filepath.Join(dir, "weed")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("testcluster: %w", err)
	}
	unlock, err := lockFile(filepath.Join(dir, "build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if exists(out) {
		return out, nil
	}
	fmt.Fprintf(log, "testcluster: building SeaweedFS's weed %s (about 10 minutes the first time)\n", SeaweedFSVersion)
	mod, err := moduleDir("github.com/seaweedfs/seaweedfs", SeaweedFSVersion)
	if err != nil {
		return "", err
	}
	src := filepath.Join(dir, "src")
	if err := os.RemoveAll(src); err != nil {
		return "", fmt.Errorf("testcluster: %w", err)
	}
	if err := os.CopyFS(src, os.DirFS(mod)); err != nil {
		return "", fmt.Errorf("testcluster: copy the seaweedfs module: %w", err)
	}
	cmd := exec.Command("go", "build", "-mod=mod", "-o", out+".tmp", "-ldflags", "-s -w", "./weed")
	cmd.Dir = src
	cmd.Env = goEnv()
	if err := run(cmd, log); err != nil {
		return "", fmt.Errorf("testcluster: build weed: %w", err)
	}
	if err := os.RemoveAll(src); err != nil {
		return "", fmt.Errorf("testcluster: %w", err)
	}
	return out, os.Rename(out+".tmp", out)
}

// SeaweedFS is a running weed server on loopback: master, volume, filer and the S3
// gateway with its IAM API writable, and one administrator identity.
type SeaweedFS struct {
	// URL is the S3 (and IAM) endpoint.
	URL                  string
	AccessKey, SecretKey string
	cmd                  *exec.Cmd
	done                 chan struct{}
}

// StartSeaweedFS starts weed in dir and waits until its S3 gateway answers.
func StartSeaweedFS(dir string, log io.Writer) (*SeaweedFS, error) {
	weed, err := BuildSeaweedFS(log)
	if err != nil {
		return nil, err
	}
	ports := make([]int, 8)
	for i := range ports {
		ports[i] = freePort()
	}
	w := &SeaweedFS{AccessKey: "runradmin", SecretKey: "runr-admin-secret-key-for-tests", done: make(chan struct{})}
	conf := map[string]any{"identities": []map[string]any{{"name": "admin",
		"credentials": []map[string]string{{"accessKey": w.AccessKey, "secretKey": w.SecretKey}},
		"actions":     []string{"Admin", "Read", "List", "Tagging", "Write"}}}}
	raw, _ := json.Marshal(conf)
	confPath := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(confPath, raw, 0o600); err != nil {
		return nil, fmt.Errorf("testcluster: %w", err)
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, fmt.Errorf("testcluster: %w", err)
	}
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	w.URL = "http://127.0.0.1:" + p(6)
	w.cmd = exec.Command(weed, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir="+data, "-volume.max=100", "-master.volumeSizeLimitMB=32",
		"-master.port="+p(0), "-master.port.grpc="+p(1), "-volume.port="+p(2), "-volume.port.grpc="+p(3),
		"-filer", "-filer.port="+p(4), "-filer.port.grpc="+p(5),
		"-s3", "-s3.port="+p(6), "-s3.port.grpc="+p(7), "-s3.port.iceberg=0", "-s3.port.lance=0",
		"-s3.config="+confPath, "-s3.iam.readOnly=false", "-s3.localSocket="+filepath.Join(dir, "s3.sock"))
	logf, err := os.Create(filepath.Join(dir, "weed.log"))
	if err != nil {
		return nil, fmt.Errorf("testcluster: %w", err)
	}
	w.cmd.Stdout, w.cmd.Stderr = logf, logf
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := w.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("testcluster: start weed: %w", err)
	}
	go func() { _ = w.cmd.Wait(); logf.Close(); close(w.done) }()
	if err := w.waitReady(); err != nil {
		w.Stop()
		return nil, fmt.Errorf("%w (log: %s)", err, filepath.Join(dir, "weed.log"))
	}
	return w, nil
}

// waitReady waits up to a minute for the S3 gateway to answer its health check.
func (w *SeaweedFS) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.URL+"/healthz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-w.done:
			return fmt.Errorf("testcluster: weed exited while starting")
		case <-ctx.Done():
			return fmt.Errorf("testcluster: weed's S3 gateway did not answer within a minute")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop ends the server and waits for it.
func (w *SeaweedFS) Stop() {
	if w.cmd.Process != nil {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-w.done:
		case <-time.After(10 * time.Second):
			_ = w.cmd.Process.Kill()
			<-w.done
		}
	}
}
