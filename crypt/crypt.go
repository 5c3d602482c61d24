// Package crypt seals the console's secrets at rest (AES-256-GCM under the application
// key and its predecessors) and makes and hashes its random tokens.
package crypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Sealed values carry the id of their key: "enc:v2:<key id>:<base64 nonce+ciphertext>".
// "enc:v1:" values (before key ids) are opened with every known key in turn.
const (
	encPrefix   = "enc:v1:"
	encPrefixV2 = "enc:v2:"
)

// ErrUndecryptable is a sealed value that no configured key opens (a key rotated away,
// or a damaged value).
var ErrUndecryptable = errors.New("no configured key opens this value (RUNR_APP_KEY, RUNR_PREVIOUS_APP_KEYS)")

// Cipher encrypts secret columns with AES-256-GCM: it writes with the current key
// (RUNR_APP_KEY) and reads with it and every previous key (RUNR_PREVIOUS_APP_KEYS), so
// that a key rotation never leaves a running console unable to read.
type Cipher struct {
	current *appKey
	keys    map[string]*appKey // by id, the current key included
	order   []*appKey          // current first
}

type appKey struct {
	id   string
	aead cipher.AEAD
}

// GenerateKey returns a new random APP_KEY, base64-encoded.
func GenerateKey() string {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(k)
}

func parseKey(key string) (*appKey, error) {
	key = strings.TrimPrefix(strings.TrimSpace(key), "base64:")
	if key == "" {
		return nil, errors.New("store: RUNR_APP_KEY is not set (run `make run`, which creates .data/app.key, or set RUNR_APP_KEY)")
	}
	raw, err := base64.StdEncoding.DecodeString(key)
	if err != nil || len(raw) != 32 {
		return nil, errors.New("store: an APP_KEY must be 32 random bytes, base64-encoded (runr secrets generate-key prints a new one)")
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, fmt.Errorf("store: cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("store: cipher: %w", err)
	}
	// The id names the key without revealing it: a hash of it, 8 hex digits.
	h := sha256.Sum256(append([]byte("runr-app-key-id:"), raw...))
	return &appKey{id: hex.EncodeToString(h[:4]), aead: aead}, nil
}

// NewCipher builds a cipher from a base64-encoded 32-byte APP_KEY ("base64:" prefix
// allowed) and the previous keys it still reads with.
func NewCipher(key string, previous ...string) (*Cipher, error) {
	cur, err := parseKey(key)
	if err != nil {
		return nil, err
	}
	c := &Cipher{current: cur, keys: map[string]*appKey{cur.id: cur}, order: []*appKey{cur}}
	for i, p := range previous {
		k, err := parseKey(p)
		if err != nil {
			return nil, fmt.Errorf("store: RUNR_PREVIOUS_APP_KEYS, key %d: %w", i+1, err)
		}
		if _, dup := c.keys[k.id]; !dup {
			c.keys[k.id] = k
			c.order = append(c.order, k)
		}
	}
	return c, nil
}

// KeyID returns the id of the key the cipher writes with.
func (c *Cipher) KeyID() string { return c.current.id }

// KeyIDs returns the ids of every key the cipher reads with, the current one first.
func (c *Cipher) KeyIDs() []string {
	out := make([]string, len(c.order))
	for i, k := range c.order {
		out[i] = k.id
	}
	return out
}

// Encrypt returns the sealed form of a value; the empty string stays empty.
func (c *Cipher) Encrypt(plain string) string {
	if plain == "" {
		return ""
	}
	return c.Seal(plain, "")
}

// Seal encrypts a value bound to associated data (empty for the secret columns): it
// opens only with the same associated data.
func (c *Cipher) Seal(plain, ad string) string {
	nonce := make([]byte, c.current.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err)
	}
	sealed := c.current.aead.Seal(nonce, nonce, []byte(plain), adBytes(ad))
	return encPrefixV2 + c.current.id + ":" + base64.StdEncoding.EncodeToString(sealed)
}

func adBytes(ad string) []byte {
	if ad == "" {
		return nil
	}
	return []byte(ad)
}

// Decrypt opens a sealed value. A value without the prefix is plaintext left from
// before encryption and is returned as it is. A value no key opens is ErrUndecryptable.
func (c *Cipher) Decrypt(v string) (string, error) {
	if !IsEncrypted(v) {
		return v, nil
	}
	return c.Open(v, "")
}

// Open opens a sealed value with its associated data.
func (c *Cipher) Open(v, ad string) (string, error) {
	var candidates []*appKey
	var body string
	switch {
	case strings.HasPrefix(v, encPrefixV2):
		id, rest, ok := strings.Cut(strings.TrimPrefix(v, encPrefixV2), ":")
		k := c.keys[id]
		if !ok || k == nil {
			return "", fmt.Errorf("store: decrypt: key %s: %w", safeID(id), ErrUndecryptable)
		}
		candidates, body = []*appKey{k}, rest
	case strings.HasPrefix(v, encPrefix):
		candidates, body = c.order, strings.TrimPrefix(v, encPrefix)
	default:
		return "", fmt.Errorf("store: decrypt: not a sealed value: %w", ErrUndecryptable)
	}
	raw, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return "", fmt.Errorf("store: decrypt: malformed value: %w", ErrUndecryptable)
	}
	for _, k := range candidates {
		n := k.aead.NonceSize()
		if len(raw) < n {
			break
		}
		if plain, err := k.aead.Open(nil, raw[:n], raw[n:], adBytes(ad)); err == nil {
			return string(plain), nil
		}
	}
	return "", fmt.Errorf("store: decrypt: %w", ErrUndecryptable)
}

// KeyIDOf returns the key id of a sealed value ("v1" for a value without one, "" for plaintext).
func KeyIDOf(v string) string {
	switch {
	case strings.HasPrefix(v, encPrefixV2):
		id, _, _ := strings.Cut(strings.TrimPrefix(v, encPrefixV2), ":")
		return safeID(id)
	case strings.HasPrefix(v, encPrefix):
		return "v1"
	}
	return ""
}

// safeID keeps a key id printable and short (it comes from the database).
func safeID(id string) string {
	if len(id) > 16 {
		id = id[:16]
	}
	return strings.Map(func(r rune) rune {
		if (r >= '0' && r <= '9') || (r >= 'a' && r <= 'f') {
			return r
		}
		return '?'
	}, id)
}

// IsEncrypted reports whether a stored value is sealed.
func IsEncrypted(v string) bool {
	return strings.HasPrefix(v, encPrefix) || strings.HasPrefix(v, encPrefixV2)
}

// HashToken returns the stored form of a bearer token.
func HashToken(t string) string {
	h := sha256.Sum256([]byte(t))
	return hex.EncodeToString(h[:])
}

// RandomToken returns a random string with the given prefix.
func RandomToken(prefix string) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}
