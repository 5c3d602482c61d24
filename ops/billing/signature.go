package billing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// A billing event is signed with HMAC-SHA256 over "<unix seconds>.<body>" keyed with
// billing.webhookSecret, sent as the header Runr-Signature: t=<unix seconds>,v1=<hex>.
// The receiver recomputes it and refuses a timestamp too far from its clock (replays).

// SignatureHeader is the header that carries an event's signature.
const SignatureHeader = "Runr-Signature"

// Sign returns the Runr-Signature value of a body sent at t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify checks a Runr-Signature value against a body, accepting a timestamp at most
// tolerance from now: what a receiver of the events does.
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig == "" {
		return errors.New("the signature header is not t=<seconds>,v1=<hex>")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return errors.New("the signature's timestamp is too far from now")
	}
	if !hmac.Equal([]byte(sig), []byte(mac(secret, ts, body))) {
		return errors.New("the signature does not match the body")
	}
	return nil
}
