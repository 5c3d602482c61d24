package handlers

import (
	"reflect"
	"strings"
	"testing"

	"runr.dev/console/perm"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// fieldName spells a permission as the field of views.Permissions that carries it:
// regions.manage is RegionsManage, regions.gpu.manage RegionsGpuManage.
func fieldName(perm string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(perm, func(r rune) bool { return r == '.' || r == '_' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// TestPermissionsOf keeps views.Permissions and store's permissions together: every
// field is the permission it spells, set by that permission alone.
func TestPermissionsOf(t *testing.T) {
	typ := reflect.TypeOf(views.Permissions{})
	byField := map[string]string{}
	for _, p := range perm.All {
		byField[fieldName(p)] = p
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		perm, ok := byField[f.Name]
		if !ok {
			t.Errorf("views.Permissions.%s names no permission of store", f.Name)
			continue
		}
		got := reflect.ValueOf(permissionsOf(map[string]bool{perm: true}))
		for j := range typ.NumField() {
			if set := got.Field(j).Bool(); set != (i == j) {
				t.Errorf("%s alone: %s is %v", perm, typ.Field(j).Name, set)
			}
		}
	}
	all := reflect.ValueOf(permissionsOf(perm.Effective("owner", nil)))
	for i := range typ.NumField() {
		if !all.Field(i).Bool() {
			t.Errorf("an owner's %s is false", typ.Field(i).Name)
		}
	}
}

func TestRegionViewDecidesStatuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    store.Region
		want func(v views.RegionView) bool
	}{
		{"active", store.Region{Status: store.RegionActive}, func(v views.RegionView) bool { return v.Active }},
		{"maintenance is not active", store.Region{Status: store.RegionMaintenance}, func(v views.RegionView) bool { return !v.Active }},
		{"not installed Serving installs", store.Region{ServingStatus: store.ComponentNotInstalled},
			func(v views.RegionView) bool { return v.ServingNotInstalled && v.ServingInstallable && !v.ServingReady }},
		{"failed Serving installs again", store.Region{ServingStatus: store.ComponentError},
			func(v views.RegionView) bool { return !v.ServingNotInstalled && v.ServingInstallable }},
		{"ready Serving", store.Region{ServingStatus: store.ComponentReady}, func(v views.RegionView) bool { return v.ServingReady && !v.ServingInstallable }},
		{"internal registry", store.Region{RegistryMode: store.RegistryInternal, RegistryStatus: store.ComponentReady},
			func(v views.RegionView) bool {
				return v.HasRegistry && v.RegistryInternal && !v.RegistryExternal && v.RegistryReady
			}},
		{"no registry", store.Region{RegistryMode: store.RegistryNone}, func(v views.RegionView) bool { return !v.HasRegistry }},
		{"external Redis", store.Region{RedisMode: store.RedisExternal}, func(v views.RegionView) bool { return v.HasRedis && v.RedisGiven }},
		{"Redis in the cluster", store.Region{RedisMode: store.RedisInCluster}, func(v views.RegionView) bool { return v.HasRedis && v.RedisGiven }},
		{"managed Redis", store.Region{RedisMode: store.RedisManaged}, func(v views.RegionView) bool { return v.HasRedis && !v.RedisGiven }},
		{"no Redis", store.Region{RedisMode: store.RedisNone}, func(v views.RegionView) bool { return !v.HasRedis && !v.RedisGiven }},
		{"an agent never seen is not installed", store.Region{}, func(v views.RegionView) bool { return v.AgentStatus == string(store.ComponentNotInstalled) }},
		{"a layer never checked is unknown", store.Region{}, func(v views.RegionView) bool { return v.HealthAPI.State == string(store.HealthUnknown) }},
		{"its status selected", store.Region{Status: store.RegionInactive}, func(v views.RegionView) bool {
			return len(v.StatusOptions) == 3 && !v.StatusOptions[0].Selected && v.StatusOptions[1].Selected && v.StatusOptions[1].Value == string(store.RegionInactive)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v := RegionView(&tc.r); !tc.want(v) {
				t.Errorf("%+v", v)
			}
		})
	}
}

func TestRegionRowMoving(t *testing.T) {
	for ms, moving := range map[store.MigrationStatus]bool{store.MigrationNone: false, store.MigrationCompleted: false,
		store.MigrationRolledBack: false, store.MigrationPending: true, store.MigrationInProgress: true, store.MigrationDNSCheck: true,
		store.MigrationFailed: true} {
		if got := regionRow(&store.Region{MigrationStatus: ms}).Moving; got != moving {
			t.Errorf("%q: moving %v, want %v", ms, got, moving)
		}
	}
}

// TestJobViewPhases: every status of a job and of a step is drawn in its own phase.
func TestJobViewPhases(t *testing.T) {
	jobs := map[store.JobStatus]views.Phase{store.JobQueued: views.PhaseQueued, store.JobRunning: views.PhaseRunning,
		store.JobSucceeded: views.PhaseDone, store.JobFailed: views.PhaseFailed, store.JobCancelled: views.PhaseFailed}
	for st, ph := range jobs {
		v := JobData{Job: &store.Job{Status: st}}.View()
		if v.Phase != ph || v.Failed != (st == store.JobFailed) || v.Succeeded != (st == store.JobSucceeded) ||
			v.Retryable != (st == store.JobFailed || st == store.JobCancelled) || v.Done != st.Done() {
			t.Errorf("job %q: %+v", st, v)
		}
	}
	steps := map[store.StepStatus]views.Phase{store.StepPending: views.PhasePending, store.StepRunning: views.PhaseRunning,
		store.StepDone: views.PhaseDone, store.StepSkipped: views.PhaseSkipped, store.StepFailed: views.PhaseFailed}
	for st, ph := range steps {
		v := stepView(store.JobStep{Status: st, Wait: "waiting for X"})
		if v.Phase != ph || (v.Wait != "") != (st == store.StepRunning) {
			t.Errorf("step %q: %+v", st, v)
		}
	}
}
