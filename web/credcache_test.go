package web

import (
	"testing"
	"time"

	"github.com/alexedwards/scs/v2"
)

// The remembered decoding is the decoding, and callers never share the values' map.
func TestDecodedSessions(t *testing.T) {
	d := &decodedSessions{next: scs.GobCodec{}}
	deadline := time.Now().Add(time.Hour).UTC().Round(time.Second)
	b, err := d.Encode(deadline, map[string]any{"user_id": "u1", "csrf": "c"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		dl, values, err := d.Decode(b)
		if err != nil || !dl.Equal(deadline) || values["user_id"] != "u1" || values["csrf"] != "c" || len(values) != 2 {
			t.Fatalf("decode %d: %v %v %v", i, dl, values, err)
		}
		values["flash"] = "changed" // scs changes the map it gets
		delete(values, "csrf")
	}
	if _, _, err := d.Decode([]byte("not gob")); err == nil {
		t.Fatal("garbage decoded")
	}
}
