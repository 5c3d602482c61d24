package main

import "testing"

// TestQuickIDReadsBothEncodings: the events of the hub come as PostgreSQL's
// json_build_object writes them, those of the replay as encoding/json does.
func TestQuickIDReadsBothEncodings(t *testing.T) {
	for in, want := range map[string]int64{
		`{"id" : 123, "job_id" : "01J"}`: 123,
		`{"id":7,"job_id":"01J"}`:        7,
		`{"id":5}`:                       5,
		`{"job_id":"01J","id":9}`:        9,
	} {
		if got := quickID([]byte(in)); got != want {
			t.Errorf("quickID(%s) = %d, want %d", in, got, want)
		}
	}
}
