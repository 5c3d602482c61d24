// Package sigtest is the supply chain's test kit: an in-memory OCI registry on
// 127.0.0.1 (go-containerregistry's pkg/registry), cosign keys made in the test, and
// images signed and attested in cosign's own storage layout (the signature at
// sha256-<hex>.sig, attestations as DSSE envelopes at sha256-<hex>.att), so that the
// deploy gate is tested against real signatures.
package sigtest

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"

	"runr.dev/console/supplychain"
)

// Registry is an in-memory registry served on 127.0.0.1 for the length of a test.
type Registry struct {
	// Host is host:port, the registry part of image references.
	Host string
	srv  *httptest.Server
}

// NewRegistry serves an empty registry until the test ends.
func NewRegistry(t testing.TB) *Registry {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return &Registry{Host: strings.TrimPrefix(srv.URL, "http://"), srv: srv}
}

// Push stores a small random image at repo:tag and returns its reference and digest.
func (r *Registry) Push(t testing.TB, repoTag string) (string, string) {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref := r.Host + "/" + repoTag
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref, d.String()
}

// Key is a cosign key pair made in the test.
type Key struct {
	Signer signature.Signer
	// PublicPEM is what `cosign generate-key-pair` writes to cosign.pub.
	PublicPEM string
}

// NewKey makes an ECDSA P-256 key pair, cosign's default.
func NewKey(t testing.TB) *Key {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := signature.LoadSigner(priv, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{Signer: s, PublicPEM: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))}
}

// Sign adds a cosign signature of the image (by digest) with the key, as `cosign sign
// --key` stores it: a simple-signing payload layer annotated with the signature.
func Sign(t testing.TB, key *Key, ref, digest string) {
	t.Helper()
	repo := repository(t, ref)
	payload, err := json.Marshal(map[string]any{
		"critical": map[string]any{"identity": map[string]any{"docker-reference": repo.String()},
			"image": map[string]any{"docker-manifest-digest": digest}, "type": supplychain.SignatureType},
		"optional": nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	sig, err := key.Signer.SignMessage(bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	appendLayer(t, repo.Tag(supplychain.SignatureTag(digest)), static.NewLayer(payload, supplychain.SimpleSigningMediaType),
		map[string]string{supplychain.SignatureAnnotation: base64.StdEncoding.EncodeToString(sig)})
}

// Attest adds an in-toto attestation of the image with the key, as `cosign attest --key
// --type <predicateType>` stores it: a DSSE envelope layer at the .att tag.
func Attest(t testing.TB, key *Key, ref, digest, predicateType string, predicate any) {
	t.Helper()
	repo := repository(t, ref)
	_, hexDigest, _ := strings.Cut(digest, ":")
	st, err := json.Marshal(map[string]any{
		"_type": "https://in-toto.io/Statement/v0.1", "predicateType": predicateType,
		"subject":   []any{map[string]any{"name": repo.String(), "digest": map[string]string{"sha256": hexDigest}}},
		"predicate": predicate,
	})
	if err != nil {
		t.Fatal(err)
	}
	env, err := dsse.WrapSigner(key.Signer, supplychain.InTotoPayloadType).SignMessage(bytes.NewReader(st))
	if err != nil {
		t.Fatal(err)
	}
	appendLayer(t, repo.Tag(supplychain.AttestationTag(digest)), static.NewLayer(env, supplychain.DSSEMediaType),
		map[string]string{supplychain.PredicateTypeAnnotation: predicateType})
}

func repository(t testing.TB, ref string) name.Repository {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	return r.Context()
}

// appendLayer adds a layer to the cosign artifact at a tag (made when missing): an OCI
// manifest with an empty config, one layer per signature or attestation.
func appendLayer(t testing.TB, tag name.Tag, l v1.Layer, annotations map[string]string) {
	t.Helper()
	base, err := remote.Image(tag)
	if err != nil {
		base = mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	}
	img, err := mutate.Append(base, mutate.Addendum{Layer: l, Annotations: annotations, MediaType: mustMediaType(t, l)})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatalf("write %s: %v", tag, err)
	}
}

func mustMediaType(t testing.TB, l v1.Layer) types.MediaType {
	t.Helper()
	mt, err := l.MediaType()
	if err != nil {
		t.Fatal(err)
	}
	return mt
}

// CycloneDX is a small CycloneDX 1.5 SBOM with the named components (the predicate of
// `cosign attest --type cyclonedx`).
func CycloneDX(components ...string) map[string]any {
	var cs []any
	for _, c := range components {
		cs = append(cs, map[string]any{"type": "library", "name": c, "version": "1.0.0", "purl": "pkg:golang/" + c + "@1.0.0"})
	}
	return map[string]any{"bomFormat": "CycloneDX", "specVersion": "1.5", "version": 1, "components": cs}
}

// TrivyScan is cosign's vuln/v1 predicate holding a Trivy JSON report with findings
// (vulnerability id → Trivy severity, e.g. CRITICAL).
func TrivyScan(findings map[string]string) map[string]any {
	var vulns []any
	for id, sev := range findings {
		vulns = append(vulns, map[string]any{"VulnerabilityID": id, "PkgName": "openssl", "Severity": sev})
	}
	return map[string]any{
		"invocation": map[string]any{"uri": "", "event_id": "", "builder.id": ""},
		"scanner": map[string]any{"uri": "pkg:github/aquasecurity/trivy@0.58.0", "version": "0.58.0",
			"db": map[string]any{"uri": "", "version": ""},
			"result": map[string]any{"SchemaVersion": 2, "ArtifactName": "app",
				"Results": []any{map[string]any{"Target": "app (debian 12)", "Vulnerabilities": vulns}}}},
		"metadata": map[string]any{"scanStartedOn": "2026-01-01T00:00:00Z", "scanFinishedOn": "2026-01-01T00:00:05Z"},
	}
}

// Transport is the registry's client transport (plain HTTP on loopback).
func (r *Registry) Transport() http.RoundTripper { return r.srv.Client().Transport }
