package supplychain

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Cosign's storage layout and formats (sigstore/cosign: pkg/oci/static, pkg/types,
// pkg/cosign/attestation).
const (
	// SimpleSigningMediaType is the media type of a signature layer: its blob is the
	// signed payload, its annotation SignatureAnnotation the base64 signature.
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// SignatureAnnotation carries a layer's base64 signature.
	SignatureAnnotation = "dev.cosignproject.cosign/signature"
	// DSSEMediaType is the media type of an attestation layer: a DSSE envelope.
	DSSEMediaType = "application/vnd.dsse.envelope.v1+json"
	// PredicateTypeAnnotation names an attestation layer's predicate type.
	PredicateTypeAnnotation = "predicateType"
	// InTotoPayloadType is the payload type of an attestation's DSSE envelope.
	InTotoPayloadType = "application/vnd.in-toto+json"
	// SignatureType is the critical.type of a simple-signing payload.
	SignatureType = "cosign container image signature"
)

// Limits on what the gate reads from a registry.
const (
	maxLayers    = 64
	maxSigBlob   = 1 << 20
	maxAttestBlb = 32 << 20
)

// SignatureTag is the tag cosign stores an image's signatures at: sha256-<hex>.sig.
func SignatureTag(digest string) string { return strings.Replace(digest, ":", "-", 1) + ".sig" }

// AttestationTag is the tag cosign stores an image's attestations at: sha256-<hex>.att.
func AttestationTag(digest string) string { return strings.Replace(digest, ":", "-", 1) + ".att" }

// simpleSigning is cosign's signed payload (the "critical" part is what is checked).
type simpleSigning struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
}

// layerBlob is one layer of a cosign artifact: its blob and annotations.
type layerBlob struct {
	MediaType   string
	Annotations map[string]string
	Data        []byte
}

// artifactLayers reads the layers of the cosign artifact at a tag of repo (nil when the
// tag does not exist).
func artifactLayers(repo name.Repository, tag string, limit int64, opts []remote.Option) ([]layerBlob, error) {
	img, err := remote.Image(repo.Tag(tag), opts...)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
			return nil, nil
		}
		return nil, fmt.Errorf("read %s:%s: %w", repo, tag, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("read the manifest of %s:%s: %w", repo, tag, err)
	}
	if len(m.Layers) > maxLayers {
		m.Layers = m.Layers[:maxLayers]
	}
	out := make([]layerBlob, 0, len(m.Layers))
	for _, d := range m.Layers {
		data, err := readLayer(img, d, limit)
		if err != nil {
			return nil, fmt.Errorf("read a layer of %s:%s: %w", repo, tag, err)
		}
		out = append(out, layerBlob{MediaType: string(d.MediaType), Annotations: d.Annotations, Data: data})
	}
	return out, nil
}

// readLayer reads one layer's blob as stored (cosign's layers are not compressed), at
// most limit bytes.
func readLayer(img v1.Image, d v1.Descriptor, limit int64) ([]byte, error) {
	if d.Size > limit {
		return nil, fmt.Errorf("layer %s is %d bytes, over the %d the gate reads", d.Digest, d.Size, limit)
	}
	l, err := img.LayerByDigest(d.Digest)
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, limit))
}

// verifySignatures returns the first key that signed the digest with a simple-signing
// layer at repo's .sig tag, or why none did.
func verifySignatures(repo name.Repository, digest string, keys []Key, opts []remote.Option) (*Key, string, error) {
	layers, err := artifactLayers(repo, SignatureTag(digest), maxSigBlob, opts)
	if err != nil {
		return nil, "", err
	}
	if len(layers) == 0 {
		return nil, "the image has no cosign signature (" + repo.String() + ":" + SignatureTag(digest) + ")", nil
	}
	why := "no signature of the image verifies with the region's keys"
	for _, l := range layers {
		if l.MediaType != SimpleSigningMediaType {
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(l.Annotations[SignatureAnnotation])
		if err != nil || len(sig) == 0 {
			continue
		}
		var p simpleSigning
		if err := json.Unmarshal(l.Data, &p); err != nil || p.Critical.Type != SignatureType {
			continue
		}
		if p.Critical.Image.DockerManifestDigest != digest {
			why = "a signature names another digest (" + p.Critical.Image.DockerManifestDigest + ")"
			continue
		}
		for i := range keys {
			if keys[i].Verifier.VerifySignature(bytes.NewReader(sig), bytes.NewReader(l.Data)) == nil {
				return &keys[i], "", nil
			}
		}
	}
	return nil, why, nil
}
