package tenancy

import (
	"errors"
	"strings"
	"testing"

	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

func f(v float64) *float64 { return &v }

// TestFitQuota: on a managed region the quotas with a limit add up to at most the
// capacity and the ceiling; 0 sets no limit and does not count; a quota left out gets
// the ceiling or what is free, whichever is smaller; a refusal says what is free.
func TestFitQuota(t *testing.T) {
	capacity := nodes.Resources{CPUm: 8000, MemoryMi: 16 * 1024} // 8 CPU, 16 GiB
	others := []store.Assignment{{CPU: 3, MemoryGiB: 6}, {CPU: 0, MemoryGiB: 2}}
	for _, tc := range []struct {
		name     string
		ceiling  Quota
		others   []store.Assignment
		current  *Quota
		in       QuotaInput
		want     Quota
		refused  []string // fields
		wantFree Quota
	}{
		{name: "exactly the capacity left", others: others, in: QuotaInput{CPU: f(5), MemoryGiB: f(8)}, want: Quota{5, 8}},
		{name: "over the capacity", others: others, in: QuotaInput{CPU: f(5.5), MemoryGiB: f(8)}, refused: []string{"cpu"}, wantFree: Quota{5, 8}},
		{name: "both over", others: others, in: QuotaInput{CPU: f(6), MemoryGiB: f(9)}, refused: []string{"cpu", "memory_gib"}, wantFree: Quota{5, 8}},
		{name: "0 is no limit and always fits", others: others, in: QuotaInput{CPU: f(0), MemoryGiB: f(0)}, want: Quota{0, 0}},
		{name: "0 of the others does not count", others: []store.Assignment{{CPU: 0, MemoryGiB: 0}}, in: QuotaInput{CPU: f(8), MemoryGiB: f(16)}, want: Quota{8, 16}},
		{name: "no others: the whole capacity", in: QuotaInput{CPU: f(8), MemoryGiB: f(16)}, want: Quota{8, 16}},
		{name: "left out without a ceiling: what is free", others: others, in: QuotaInput{}, want: Quota{5, 8}},
		{name: "left out with a ceiling below the free part: the ceiling", ceiling: Quota{CPU: 2, MemoryGiB: 4}, in: QuotaInput{}, want: Quota{2, 4}},
		{name: "left out with a ceiling above the free part: the free part (the ceiling caps the sum too)", ceiling: Quota{CPU: 7, MemoryGiB: 10}, others: others, in: QuotaInput{}, want: Quota{4, 2}},
		{name: "the ceiling caps the sum", ceiling: Quota{CPU: 4, MemoryGiB: 10}, others: others, in: QuotaInput{CPU: f(1), MemoryGiB: f(2)}, want: Quota{1, 2}},
		{name: "over the ceiling", ceiling: Quota{CPU: 4, MemoryGiB: 10}, others: others, in: QuotaInput{CPU: f(1.5), MemoryGiB: f(2)}, refused: []string{"cpu"}, wantFree: Quota{1, 2}},
		{name: "a ceiling in one resource only", ceiling: Quota{CPU: 0, MemoryGiB: 10}, others: others, in: QuotaInput{CPU: f(5), MemoryGiB: f(2)}, want: Quota{5, 2}},
		{name: "nothing free for a default", others: []store.Assignment{{CPU: 8, MemoryGiB: 16}}, in: QuotaInput{}, refused: []string{"cpu", "memory_gib"}},
		{name: "a change keeps what it leaves out", others: others, current: &Quota{CPU: 2, MemoryGiB: 3}, in: QuotaInput{MemoryGiB: f(8)}, want: Quota{2, 8}},
		{name: "a change whose kept quota no longer fits", others: []store.Assignment{{CPU: 7}}, current: &Quota{CPU: 2, MemoryGiB: 3}, in: QuotaInput{MemoryGiB: f(1)}, refused: []string{"cpu"}, wantFree: Quota{1, 16}},
		{name: "decimals add up exactly", others: []store.Assignment{{CPU: 0.1}, {CPU: 0.2}}, in: QuotaInput{CPU: f(7.7), MemoryGiB: f(1)}, want: Quota{7.7, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FitQuota(QuotaLimit(capacity, tc.ceiling), tc.ceiling, tc.others, tc.current, tc.in)
			if len(tc.refused) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got != tc.want {
					t.Fatalf("quotas %+v, want %+v", got, tc.want)
				}
				return
			}
			var inv *problem.Invalid
			if !errors.As(err, &inv) || len(inv.Fields) != len(tc.refused) {
				t.Fatalf("got %+v, %v: want a refusal of %v", got, err, tc.refused)
			}
			for _, field := range tc.refused {
				if inv.Fields[field] == "" {
					t.Errorf("no message on %s: %v", field, inv.Fields)
				}
			}
			if free, _ := inv.Details["free"].(Quota); tc.wantFree != (Quota{}) && free != tc.wantFree {
				t.Errorf("free %+v, want %+v", free, tc.wantFree)
			}
			if tc.wantFree.CPU > 0 && !strings.Contains(inv.Fields[tc.refused[0]], num(tc.wantFree.CPU)) && tc.refused[0] == "cpu" {
				t.Errorf("the message does not say what is free: %q", inv.Fields["cpu"])
			}
		})
	}
}

// TestQuotaLimit: the capacity in cores and GiB, capped by the ceiling when one is set.
func TestQuotaLimit(t *testing.T) {
	c := nodes.Resources{CPUm: 3500, MemoryMi: 3072}
	if got := QuotaLimit(c, Quota{}); got != (Quota{3.5, 3}) {
		t.Fatalf("no ceiling: %+v", got)
	}
	if got := QuotaLimit(c, Quota{CPU: 2, MemoryGiB: 8}); got != (Quota{2, 3}) {
		t.Fatalf("ceiling: %+v", got)
	}
}

// TestQuotaBudgets: a tenant's quota splits like the region capacity: the quota is the
// always-on budget, the FaaS budget is the quota × the overcommit factors less the
// tenant's always-on reservations; a quota of 0 refuses nothing.
func TestQuotaBudgets(t *testing.T) {
	on := store.Reservation{Projects: 1, CPUm: 500, MemoryMi: 512}
	faas := store.Reservation{Projects: 2, CPUm: 1000, MemoryMi: 1024}
	b := QuotaBudgets(Quota{CPU: 2, MemoryGiB: 2}, 3, 1.5, on, faas)
	if b.AlwaysOn.CPU.Budget != 2000 || b.AlwaysOn.CPU.Used != 500 || b.AlwaysOn.Memory.Budget != 2048 {
		t.Fatalf("always-on: %+v", b.AlwaysOn)
	}
	if b.FaaS.CPU.Gross != 6000 || b.FaaS.CPU.Budget != 5500 || b.FaaS.CPU.Free != 4500 || b.FaaS.Memory.Gross != 3072 || b.FaaS.Memory.Free != 3072-512-1024 {
		t.Fatalf("FaaS: %+v", b.FaaS)
	}
	if e := nodes.CheckAdmission("r", b, nodes.AdmitRequest{CPUm: 1500, MemoryMi: 100, AlwaysOn: true}); e != nil {
		t.Fatalf("fits the always-on budget: %v", e)
	}
	e := nodes.CheckAdmission("r", b, nodes.AdmitRequest{CPUm: 1600, MemoryMi: 100, AlwaysOn: true})
	if e == nil || e.Budget != "tenant always-on" || len(e.Shortfalls) != 1 || e.Shortfalls[0].Free != 1500 {
		t.Fatalf("over the always-on budget: %+v", e)
	}
	if e := nodes.CheckAdmission("r", b, nodes.AdmitRequest{CPUm: 4600, MemoryMi: 10}); e == nil || e.Budget != "tenant FaaS" {
		t.Fatalf("over the FaaS budget: %+v", e)
	}
	unlimited := QuotaBudgets(Quota{CPU: 0, MemoryGiB: 1}, 3, 1.5, on, faas)
	if e := nodes.CheckAdmission("r", unlimited, nodes.AdmitRequest{CPUm: 1 << 40, MemoryMi: 100, AlwaysOn: true}); e != nil {
		t.Fatalf("a CPU quota of 0 refused CPU: %v", e)
	}
	if e := nodes.CheckAdmission("r", unlimited, nodes.AdmitRequest{CPUm: 1, MemoryMi: 1024, AlwaysOn: true}); e == nil || e.Shortfalls[0].Resource != "memory" {
		t.Fatalf("the memory quota still holds: %+v", e)
	}
}

// TestRegionMutable: platform users change platform regions; a tenant's users change
// their tenant's regions and nothing else; details of an assigned platform region are
// refused to tenant users, its summary is not.
func TestRegionMutable(t *testing.T) {
	a := "tenant-a"
	platformRegion := &store.Region{Name: "p"}
	own := &store.Region{Name: "a", TenantID: &a}
	other := &store.Region{Name: "b", TenantID: store.Ptr("tenant-b")}
	platform, tenant := kit.Actor{Email: "root"}, kit.Actor{Email: "ada", TenantID: a}
	for _, tc := range []struct {
		actor  kit.Actor
		r      *store.Region
		access RegionAccess
		ok     bool
	}{
		{platform, platformRegion, RegionChange, true}, {platform, own, RegionChange, false}, {platform, own, RegionDetails, true},
		{tenant, platformRegion, RegionChange, false}, {tenant, platformRegion, RegionDetails, false}, {tenant, platformRegion, RegionSummary, true},
		{tenant, own, RegionChange, true}, {tenant, other, RegionChange, false}, {tenant, other, RegionDetails, false},
	} {
		err := CheckRegionAccess(tc.actor, tc.r, tc.access)
		var fb *problem.Forbidden
		if tc.ok != (err == nil) || err != nil && !errors.As(err, &fb) {
			t.Errorf("%s on %s (access %d): %v, want allowed %v", tc.actor.Email, tc.r.Name, tc.access, err, tc.ok)
		}
	}
}
