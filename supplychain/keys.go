// Package supplychain reads what cosign stores beside an image in its registry (the
// signature at tag sha256-<hex>.sig, the attestations at sha256-<hex>.att, DSSE envelopes
// of in-toto statements) and judges an image against a region's requirements: signed by
// one of its cosign public keys, an SBOM attestation, a vulnerability scan attestation
// without findings at or above a severity. It knows nothing of regions or projects.
package supplychain

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// Key is a cosign public key the administrator gave, parsed.
type Key struct {
	// ID is the first 16 hex digits of the SHA-256 of the key's DER form (public).
	ID       string
	PEM      string
	Verifier signature.Verifier
}

// ParseKey reads one PEM public key (what `cosign generate-key-pair` writes to
// cosign.pub): ECDSA, RSA or Ed25519. Private keys and certificates are refused.
func ParseKey(pemText string) (Key, error) {
	pemText = strings.TrimSpace(pemText)
	block, rest := pem.Decode([]byte(pemText))
	switch {
	case block == nil:
		return Key{}, errors.New("not a PEM public key (-----BEGIN PUBLIC KEY-----)")
	case strings.Contains(block.Type, "PRIVATE"):
		return Key{}, errors.New("this is a private key: give the public key (cosign.pub), never the private one")
	case block.Type != "PUBLIC KEY":
		return Key{}, fmt.Errorf("a PEM %q block is not a public key (-----BEGIN PUBLIC KEY-----)", block.Type)
	case len(strings.TrimSpace(string(rest))) > 0:
		return Key{}, errors.New("one public key per entry")
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey([]byte(pemText))
	if err != nil {
		return Key{}, fmt.Errorf("read the public key: %w", err)
	}
	switch k := pub.(type) {
	case *ecdsa.PublicKey, ed25519.PublicKey:
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return Key{}, errors.New("an RSA key needs at least 2048 bits")
		}
	default:
		return Key{}, fmt.Errorf("unsupported key type %T: use ECDSA, RSA or Ed25519", pub)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return Key{}, fmt.Errorf("load the public key: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return Key{}, fmt.Errorf("encode the public key: %w", err)
	}
	sum := sha256.Sum256(der)
	canonical := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	return Key{ID: hex.EncodeToString(sum[:8]), PEM: canonical, Verifier: v}, nil
}

// ParseKeys reads every key, or says which one is wrong (1-based).
func ParseKeys(pems []string) ([]Key, error) {
	out := make([]Key, 0, len(pems))
	for i, p := range pems {
		k, err := ParseKey(p)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		out = append(out, k)
	}
	return out, nil
}
