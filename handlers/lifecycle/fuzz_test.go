package lifecycle

import (
	"testing"
	"time"

	"runr.dev/console/crypt"
)

// FuzzUnsealStep1: no input opens as another user's sealed state, expired or not, and
// nothing panics; a genuine state survives a round trip.
func FuzzUnsealStep1(f *testing.F) {
	c, err := crypt.NewCipher("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	if err != nil {
		f.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	good := SealStep1(c, "user-1", SealedStep1{Name: "eu-2"}, now)
	f.Add(good, "user-1")
	f.Add(good, "user-2")
	f.Add("enc:v1:AAAA", "user-1")
	f.Add("enc:v2:00000000:AAAA", "")
	f.Add("", "user-1")
	f.Fuzz(func(t *testing.T, sealed, user string) {
		v, err := UnsealStep1(c, user, sealed, now)
		// Only a state this test sealed (for user-1, with the key) may open.
		if err == nil && (user != "user-1" || v.Name != "eu-2") {
			t.Fatalf("%q opened for %q", sealed, user)
		}
		if _, err := UnsealStep1(c, user, sealed, now.Add(2*time.Hour)); err == nil {
			t.Fatal("an expired state opened")
		}
	})
}
