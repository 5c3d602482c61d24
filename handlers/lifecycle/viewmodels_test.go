package lifecycle

import (
	"testing"

	"runr.dev/console/store"
)

func TestMigrationDataActions(t *testing.T) {
	for _, tc := range []struct {
		status                       store.MigrationStatus
		shown                        string
		dnsCheck, rollback, canStart bool
	}{
		{store.MigrationNone, "none", false, false, true},
		{store.MigrationPending, "pending", false, false, false},
		{store.MigrationInProgress, "in_progress", false, false, false},
		{store.MigrationDNSCheck, "dns_check", true, true, false},
		{store.MigrationFailed, "failed", false, true, true},
		{store.MigrationCompleted, "completed", false, false, true},
		{store.MigrationRolledBack, "rolled_back", false, false, true},
	} {
		d := migrationData(MigrationStatus{MigrationStatus: tc.status})
		if d.Status != tc.shown || d.DNSCheck != tc.dnsCheck || d.CanRollback != tc.rollback || d.CanStart != tc.canStart {
			t.Errorf("%q: %+v", tc.status, d)
		}
	}
}
