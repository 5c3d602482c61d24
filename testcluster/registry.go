package testcluster

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"runr.dev/console/images"
)

// Registry is a real-node cluster's image registry: go-containerregistry's registry, in
// memory, on a loopback port of the machine and, inside the namespace, at NodeIP:5000.
// It keeps each upstream registry's images under a path of its name
// (ghcr.io/brf-tech/runr/agent), as Zot's sync does; the node's hosts.toml send the pulls of
// those registries here. It is the only source of images: an image it does not have
// fails its pod's pull, and Missing names it.
type Registry struct {
	// Addr is the registry's loopback address on the machine (host:port).
	Addr string

	srv      *http.Server
	mu       sync.Mutex
	requests []RegistryRequest
}

// RegistryRequest is one request the registry answered.
type RegistryRequest struct {
	Method string
	// Host is the address the client asked for: NodeIP:5000 through the harness's
	// hosts.toml, or another (a Service's cluster IP) through the region's node mirror.
	Host   string
	Path   string
	Status int
}

func startRegistry() (*Registry, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Registry{Addr: ln.Addr().String()}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rw, req)
		r.mu.Lock()
		r.requests = append(r.requests, RegistryRequest{Method: req.Method, Host: req.Host, Path: req.URL.Path, Status: rw.status})
		r.mu.Unlock()
	})}
	go r.srv.Serve(ln)
	return r, nil
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) { s.status = code; s.ResponseWriter.WriteHeader(code) }

// Close stops the registry.
func (r *Registry) Close() { r.srv.Close() }

// repoPath is where the registry keeps an image reference: under the name of its registry
// (docker.io/library/redis for redis).
func repoPath(ref string) (name.Reference, string, error) {
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return nil, "", fmt.Errorf("testcluster: image %s: %w", ref, err)
	}
	host := parsed.Context().RegistryStr()
	if host == name.DefaultRegistry {
		host = "docker.io" // containerd's name for Docker Hub (its hosts.toml directory)
	}
	return parsed, host + "/" + parsed.Context().RepositoryStr(), nil
}

// Push stores an image under its real name (e.g. ghcr.io/brf-tech/runr/agent:1.2.3).
func (r *Registry) Push(ctx context.Context, ref string, img v1.Image) error {
	parsed, path, err := repoPath(ref)
	if err != nil {
		return err
	}
	return images.Push(ctx, r.Addr+"/"+path+":"+parsed.Identifier(), img)
}

// Image reads an image the registry holds under its real name.
func (r *Registry) Image(ref string) (v1.Image, error) {
	parsed, path, err := repoPath(ref)
	if err != nil {
		return nil, err
	}
	local, err := name.ParseReference(r.Addr+"/"+path+":"+parsed.Identifier(), name.Insecure)
	if err != nil {
		return nil, err
	}
	return remote.Image(local)
}

// Requests are the requests the registry answered so far.
func (r *Registry) Requests() []RegistryRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]RegistryRequest(nil), r.requests...)
}

// ManifestPulls are the requests for the manifest of ref (by its tag).
func (r *Registry) ManifestPulls(ref string) []RegistryRequest {
	parsed, path, err := repoPath(ref)
	if err != nil {
		return nil
	}
	want := "/v2/" + path + "/manifests/" + parsed.Identifier()
	var out []RegistryRequest
	for _, q := range r.Requests() {
		if q.Path == want && (q.Method == http.MethodGet || q.Method == http.MethodHead) {
			out = append(out, q)
		}
	}
	return out
}

// Missing are the images pulled from the registry that it does not have (as
// registry/repository:tag): manifests asked for in vain and never pushed.
func (r *Registry) Missing() []string {
	asked, pushed := map[string]bool{}, map[string]bool{}
	for _, q := range r.Requests() {
		repo, tag, ok := strings.Cut(strings.TrimPrefix(q.Path, "/v2/"), "/manifests/")
		switch {
		case !ok:
		case q.Method == http.MethodPut && q.Status < 300:
			pushed[repo+":"+tag] = true
		case q.Status == http.StatusNotFound:
			asked[repo+":"+tag] = true
		}
	}
	var out []string
	for k := range asked {
		if !pushed[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
