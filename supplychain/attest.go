package supplychain

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/in-toto/in-toto-golang/in_toto"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
)

// Predicate types the gate reads (cosign attest --type cyclonedx | spdxjson | vuln).
const (
	PredicateCycloneDX = in_toto.PredicateCycloneDX
	PredicateSPDX      = in_toto.PredicateSPDX
	PredicateVuln      = "https://cosign.sigstore.dev/attestation/vuln/v1"
)

// attestation is a verified in-toto statement about the image.
type attestation struct {
	PredicateType string
	Predicate     json.RawMessage
	KeyID         string
}

// statement is an in-toto statement (v0.1 or v1) with its predicate kept raw.
type statement struct {
	in_toto.StatementHeader
	Predicate json.RawMessage `json:"predicate"`
}

// verifiedAttestations returns the attestations at repo's .att tag whose DSSE envelope
// verifies with one of the keys and whose statement's subject is the digest.
func verifiedAttestations(repo name.Repository, digest string, keys []Key, opts []remote.Option) ([]attestation, error) {
	layers, err := artifactLayers(repo, AttestationTag(digest), maxAttestBlb, opts)
	if err != nil {
		return nil, err
	}
	algo, hexDigest, _ := strings.Cut(digest, ":")
	var out []attestation
	for _, l := range layers {
		if l.MediaType != DSSEMediaType {
			continue
		}
		for _, k := range keys {
			var payload []byte
			v := dsse.WrapVerifier(k.Verifier, dsse.WithExpectedPayloadType(InTotoPayloadType), dsse.WithDecodedPayload(&payload))
			if v.VerifySignature(bytes.NewReader(l.Data), nil) != nil {
				continue
			}
			var st statement
			if err := json.Unmarshal(payload, &st); err != nil || !aboutDigest(st.Subject, algo, hexDigest) {
				break
			}
			out = append(out, attestation{PredicateType: st.PredicateType, Predicate: st.Predicate, KeyID: k.ID})
			break
		}
	}
	return out, nil
}

// aboutDigest reports whether one of a statement's subjects is the image's digest.
func aboutDigest(subjects []in_toto.Subject, algo, hexDigest string) bool {
	for _, s := range subjects {
		if s.Digest[algo] == hexDigest {
			return true
		}
	}
	return false
}

// isSBOM reports an SBOM predicate type (CycloneDX or SPDX, any version suffix).
func isSBOM(pt string) bool {
	return strings.HasPrefix(pt, PredicateCycloneDX) || strings.HasPrefix(pt, PredicateSPDX)
}
