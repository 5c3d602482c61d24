package crypt_test

import (
	"strings"
	"testing"

	"runr.dev/console/crypt"
	"runr.dev/console/store/storetest"
)

func TestCipher(t *testing.T) {
	c, err := crypt.NewCipher(storetest.AppKey)
	if err != nil {
		t.Fatal(err)
	}
	enc := c.Encrypt("s3cret")
	if !crypt.IsEncrypted(enc) || strings.Contains(enc, "s3cret") || enc == c.Encrypt("s3cret") {
		t.Fatalf("bad ciphertext %q", enc)
	}
	if got, err := c.Decrypt(enc); err != nil || got != "s3cret" {
		t.Fatalf("decrypt: %q %v", got, err)
	}
	other, _ := crypt.NewCipher(crypt.GenerateKey())
	if _, err := other.Decrypt(enc); err == nil {
		t.Fatal("a wrong key must not decrypt")
	}
	if _, err := crypt.NewCipher("short"); err == nil {
		t.Fatal("a short key must be refused")
	}
}
