package supplychain

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Requirements are what an image must show to be deployed.
type Requirements struct {
	// Keys verify the image's signature and its attestations (at least one key when
	// anything is required).
	Keys []Key
	// RequireSBOM and RequireScan ask for an SBOM and a vulnerability scan attestation.
	RequireSBOM bool
	RequireScan bool
	// FailAt is the severity at or above which a scan's finding refuses the image.
	FailAt string
}

// Verdict is the gate's judgement of one image.
type Verdict struct {
	Image    string   `json:"image"`
	Digest   string   `json:"digest,omitempty"`
	Accepted bool     `json:"accepted"`
	Reasons  []string `json:"reasons,omitempty"`
	// SignedBy is the id of the key whose signature verified.
	SignedBy string `json:"signed_by,omitempty"`
	// SBOM describes the SBOM attestation found ("" when none).
	SBOM string `json:"sbom,omitempty"`
	// Scan is the scan attestation found (nil when none).
	Scan *ScanResult `json:"scan,omitempty"`
}

// Reason is the verdict's reasons in one sentence.
func (v Verdict) Reason() string { return strings.Join(v.Reasons, "; ") }

func (v *Verdict) refuse(format string, args ...any) {
	v.Accepted = false
	v.Reasons = append(v.Reasons, fmt.Sprintf(format, args...))
}

// Check judges an image against the requirements, reading its registry with opts
// (transport, authentication). Whatever cannot be read refuses the image: the gate
// fails closed. The error is only for a context that ended.
func Check(ctx context.Context, image string, req Requirements, opts ...remote.Option) (Verdict, error) {
	v := Verdict{Image: image, Accepted: true}
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	ref, err := name.ParseReference(image, name.WeakValidation)
	if err != nil {
		v.refuse("%q is not an image reference: %v", image, err)
		return v, nil
	}
	desc, err := remote.Head(ref, opts...)
	if err != nil {
		if ctx.Err() != nil {
			return v, fmt.Errorf("check image %s: %w", image, ctx.Err())
		}
		v.refuse("the registry did not give the image's digest: %s", short(err))
		return v, nil
	}
	v.Digest = desc.Digest.String()
	repo := ref.Context()
	if len(req.Keys) == 0 {
		return v, nil
	}
	key, why, err := verifySignatures(repo, v.Digest, req.Keys, opts)
	switch {
	case err != nil:
		v.refuse("the signature could not be read: %s", short(err))
	case key == nil:
		v.refuse("%s", why)
	default:
		v.SignedBy = key.ID
	}
	if !req.RequireSBOM && !req.RequireScan && req.FailAt == "" {
		return v, nil
	}
	atts, err := verifiedAttestations(repo, v.Digest, req.Keys, opts)
	if err != nil {
		v.refuse("the attestations could not be read: %s", short(err))
		return v, nil
	}
	judgeAttestations(&v, atts, req)
	return v, nil
}

// judgeAttestations reads the SBOM and the scan among the verified attestations and
// refuses what the requirements do not allow.
func judgeAttestations(v *Verdict, atts []attestation, req Requirements) {
	var sbomErr, scanErr error
	for _, a := range atts {
		if isSBOM(a.PredicateType) && v.SBOM == "" {
			desc, err := readSBOM(a.PredicateType, a.Predicate)
			if err != nil {
				sbomErr = err
			}
			v.SBOM = desc
		}
		if a.PredicateType == PredicateVuln || isSBOM(a.PredicateType) && v.Scan == nil {
			res, err := readScan(a.PredicateType, a.Predicate)
			switch {
			case err == nil:
				v.Scan = &res
			case a.PredicateType == PredicateVuln:
				scanErr = err
			}
		}
	}
	if req.RequireSBOM && v.SBOM == "" {
		if sbomErr != nil {
			v.refuse("the SBOM attestation cannot be read: %v", sbomErr)
		} else {
			v.refuse("no SBOM attestation (CycloneDX or SPDX) signed with the region's keys")
		}
	}
	if v.Scan == nil {
		if scanErr != nil {
			v.refuse("the scan attestation cannot be read: %v", scanErr)
		} else if req.RequireScan {
			v.refuse("no vulnerability scan attestation signed with the region's keys")
		}
		return
	}
	if req.FailAt == "" {
		return
	}
	if b := v.Scan.Blocking(req.FailAt); len(b) > 0 {
		ids := make([]string, 0, 5)
		for i, f := range b {
			if i == 5 {
				ids = append(ids, fmt.Sprintf("and %d more", len(b)-5))
				break
			}
			ids = append(ids, f.ID+" ("+f.Severity+")")
		}
		v.refuse("%d finding(s) at or above %s: %s", len(b), req.FailAt, strings.Join(ids, ", "))
	}
}

// short keeps the first line of an error, at most 300 characters.
func short(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
