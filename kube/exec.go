package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
)

// ExecError is a command that ran in a container and failed (Code is its exit code, -1
// when the node did not say); Stdout and Stderr are what it printed.
type ExecError struct {
	Code           int
	Stdout, Stderr string
}

func (e *ExecError) Error() string {
	msg := Short(errors.New(string(bytes.TrimSpace([]byte(e.Stderr)))))
	if e.Code < 0 {
		return "the command failed: " + msg
	}
	return fmt.Sprintf("exit code %d: %s", e.Code, msg)
}

// Exec runs a command in a pod's container (pods/exec, SPDY, through the address policy
// like every other call) and returns what it printed on stdout. A command that ran and
// failed is an *ExecError carrying both streams.
func (c *Cluster) Exec(ctx context.Context, namespace, pod, container string, command []string) (string, error) {
	req := c.Clientset.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	tlsConfig, err := rest.TLSConfigFor(c.REST)
	if err != nil {
		return "", fmt.Errorf("exec in %s/%s: TLS: %w", namespace, pod, err)
	}
	upgrader, err := spdy.NewRoundTripperWithConfig(spdy.RoundTripperConfig{
		UpgradeTransport: &http.Transport{TLSClientConfig: tlsConfig, DialContext: c.REST.Dial, ForceAttemptHTTP2: false},
		PingPeriod:       5e9,
	})
	if err != nil {
		return "", fmt.Errorf("exec in %s/%s: %w", namespace, pod, err)
	}
	wrapped, err := rest.HTTPWrappersForConfig(c.REST, upgrader)
	if err != nil {
		return "", fmt.Errorf("exec in %s/%s: %w", namespace, pod, err)
	}
	ex, err := remotecommand.NewSPDYExecutorForTransports(wrapped, upgrader, "POST", req.URL())
	if err != nil {
		return "", fmt.Errorf("exec in %s/%s: %w", namespace, pod, err)
	}
	var stdout, stderr bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	var exit exec.CodeExitError
	switch {
	case errors.As(err, &exit):
		return stdout.String(), &ExecError{Code: exit.Code, Stdout: stdout.String(), Stderr: stderr.String()}
	case err != nil && stderr.Len() > 0:
		// kwok's kubelet API reports a failed command as an error of its own: what the
		// command said is the cause worth showing.
		return stdout.String(), &ExecError{Code: -1, Stdout: stdout.String(), Stderr: stderr.String()}
	case err != nil:
		return stdout.String(), fmt.Errorf("exec in %s/%s: %w", namespace, pod, err)
	}
	return stdout.String(), nil
}
