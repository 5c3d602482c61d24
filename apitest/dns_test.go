package apitest

import (
	"testing"

	"runr.dev/console/testcluster"
)

// newZone starts a real DNS server on loopback whose A records a test changes.
func newZone(t *testing.T) *testcluster.Zone {
	t.Helper()
	z, err := testcluster.StartZone()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(z.Close)
	return z
}
