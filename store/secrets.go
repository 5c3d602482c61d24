package store

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// encPrefix marks a value encrypted with AES-256-GCM under the APP_KEY.
const encPrefix = "enc:v1:"

// Cipher encrypts secret columns with AES-256-GCM under the APP_KEY.
type Cipher struct{ aead cipher.AEAD }

// GenerateKey returns a new random APP_KEY, base64-encoded.
func GenerateKey() string {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(k)
}

// NewCipher builds a cipher from a base64-encoded 32-byte APP_KEY ("base64:" prefix allowed).
func NewCipher(key string) (*Cipher, error) {
	key = strings.TrimPrefix(strings.TrimSpace(key), "base64:")
	if key == "" {
		return nil, errors.New("store: RUNR_APP_KEY is not set (run `make run`, which creates .data/app.key, or set RUNR_APP_KEY)")
	}
	raw, err := base64.StdEncoding.DecodeString(key)
	if err != nil || len(raw) != 32 {
		return nil, errors.New("store: RUNR_APP_KEY must be 32 random bytes, base64-encoded (runr secrets rotate-key prints a new one)")
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, fmt.Errorf("store: cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("store: cipher: %w", err)
	}
	return &Cipher{aead: aead}, nil
}

// Encrypt returns the sealed form of a value; the empty string stays empty.
func (c *Cipher) Encrypt(plain string) string {
	if plain == "" {
		return ""
	}
	nonce := make([]byte, c.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err)
	}
	sealed := c.aead.Seal(nonce, nonce, []byte(plain), nil)
	return encPrefix + base64.StdEncoding.EncodeToString(sealed)
}

// Decrypt opens a sealed value. A value without the prefix is plaintext left from
// before encryption and is returned as it is.
func (c *Cipher) Decrypt(v string) (string, error) {
	if !strings.HasPrefix(v, encPrefix) {
		return v, nil
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(v, encPrefix))
	if err != nil || len(raw) < c.aead.NonceSize() {
		return "", errors.New("store: decrypt: malformed value")
	}
	n := c.aead.NonceSize()
	plain, err := c.aead.Open(nil, raw[:n], raw[n:], nil)
	if err != nil {
		return "", errors.New("store: decrypt: wrong APP_KEY or corrupted value")
	}
	return string(plain), nil
}

// IsEncrypted reports whether a stored value is sealed.
func IsEncrypted(v string) bool { return strings.HasPrefix(v, encPrefix) }

// secretColumn names one column that holds secrets.
type secretColumn struct{ table, key, column string }

// secretColumns lists every column that holds a secret at rest.
var secretColumns = []secretColumn{
	{"regions", "id", "kubeconfig"},
	{"regions", "id", "old_kubeconfig"},
	{"regions", "id", "registry_secret"},
	{"regions", "id", "redis_password"},
	{"regions", "id", "function_tls_key"},
	{"regions", "id", "agent_token"},
	{"jobs", "id", "secret_params"},
}

// registerSecretColumn adds a column to the list (for tables added by later migrations).
func registerSecretColumn(table, key, column string) {
	secretColumns = append(secretColumns, secretColumn{table, key, column})
}

// EncryptPlaintext encrypts every secret value still stored in plain text and returns how many.
func (s *Store) EncryptPlaintext(ctx context.Context) (int, error) {
	total := 0
	for _, sc := range secretColumns {
		q := fmt.Sprintf(`SELECT %s AS k, %s AS v FROM %s WHERE %s <> '' AND %s NOT LIKE 'enc:v1:%%'`, sc.key, sc.column, sc.table, sc.column, sc.column)
		var rows []struct{ K, V string }
		if err := s.DB.SelectContext(ctx, &rows, q); err != nil {
			return total, wrap("encrypt plaintext "+sc.table+"."+sc.column, err)
		}
		for _, r := range rows {
			u := fmt.Sprintf(`UPDATE %s SET %s = $1 WHERE %s = $2 AND %s = $3`, sc.table, sc.column, sc.key, sc.column)
			res, err := s.DB.ExecContext(ctx, u, s.Cipher.Encrypt(r.V), r.K, r.V)
			if err != nil {
				return total, wrap("encrypt plaintext "+sc.table+"."+sc.column, err)
			}
			n, _ := res.RowsAffected()
			total += int(n)
		}
	}
	return total, nil
}

// RotateKey re-encrypts every secret value under next, in one transaction, and returns how many.
// Plaintext values are encrypted on the way.
func (s *Store) RotateKey(ctx context.Context, next *Cipher) (int, error) {
	tx, err := s.DB.BeginTxx(ctx, nil)
	if err != nil {
		return 0, wrap("rotate key", err)
	}
	defer tx.Rollback()
	total := 0
	for _, sc := range secretColumns {
		q := fmt.Sprintf(`SELECT %s AS k, %s AS v FROM %s WHERE %s <> '' FOR UPDATE`, sc.key, sc.column, sc.table, sc.column)
		var rows []struct{ K, V string }
		if err := tx.SelectContext(ctx, &rows, q); err != nil {
			return 0, wrap("rotate key "+sc.table+"."+sc.column, err)
		}
		for _, r := range rows {
			plain, err := s.Cipher.Decrypt(r.V)
			if err != nil {
				return 0, fmt.Errorf("store: rotate key: %s.%s of %s: %w", sc.table, sc.column, r.K, err)
			}
			u := fmt.Sprintf(`UPDATE %s SET %s = $1 WHERE %s = $2`, sc.table, sc.column, sc.key)
			if _, err := tx.ExecContext(ctx, u, next.Encrypt(plain), r.K); err != nil {
				return 0, wrap("rotate key "+sc.table+"."+sc.column, err)
			}
			total++
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, wrap("rotate key", err)
	}
	s.Cipher = next
	return total, nil
}
