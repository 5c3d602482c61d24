package billing

import (
	"strings"
	"testing"
	"time"
)

func TestAmountRoundsOnceHalfUp(t *testing.T) {
	hour := int64(60)
	for _, tc := range []struct {
		name   string
		u      Usage
		p      Prices
		fixed  bool
		markup int64
		digits int
		want   int64
	}{
		{"nothing", Usage{}, Prices{VCPUHour: 40_000}, false, 0, 2, 0},
		{"one vCPU for an hour at 0.04", Usage{CPUMinutesM: 1000 * hour}, Prices{VCPUHour: 40_000}, false, 0, 2, 4},
		{"100m for a minute at 0.04 is 0.0000667: rounds to 0", Usage{CPUMinutesM: 100}, Prices{VCPUHour: 40_000}, false, 0, 2, 0},
		// 0.005 exactly is half a cent: half up.
		{"exactly half a cent rounds up", Usage{CPUMinutesM: 1000 * hour}, Prices{VCPUHour: 5_000}, false, 0, 2, 1},
		{"just under half a cent rounds down", Usage{CPUMinutesM: 1000*hour - 1}, Prices{VCPUHour: 5_000}, false, 0, 2, 0},
		// 30 minutes of 250m at 0.04: 0.005 → rounds once over the sum, not per minute.
		{"the sum is rounded, not the minutes", Usage{CPUMinutesM: 250 * 30 * 4}, Prices{VCPUHour: 10_000}, false, 0, 2, 1},
		{"one GiB for an hour", Usage{MemoryMinutesMi: 1024 * hour}, Prices{MemoryGiBHour: 12_345}, false, 0, 2, 1},
		{"GPU hours", Usage{GPUMinutes: 90}, Prices{GPUHour: 2_500_000}, false, 0, 2, 375},
		{"three parts together", Usage{CPUMinutesM: 2000 * hour, MemoryMinutesMi: 4096 * hour, GPUMinutes: 60},
			Prices{VCPUHour: 30_000, MemoryGiBHour: 4_000, GPUHour: 1_000_000}, false, 0, 2, 6 + 2 + 100},
		{"a fixed allocation", Usage{CPUMinutesM: 99999}, Prices{VCPUHour: 0, FixedPeriod: 250_000_000}, true, 0, 2, 25000},
		{"a markup of 15 %", Usage{}, Prices{FixedPeriod: 100_000_000}, true, 1500, 2, 11500},
		{"a markup on a fraction: 0.10 + 12.5 % = 0.1125 → 0.11", Usage{}, Prices{FixedPeriod: 100_000}, true, 1250, 2, 11},
		{"yen have no minor unit", Usage{CPUMinutesM: 1000 * hour}, Prices{VCPUHour: 5_500_000}, false, 0, 0, 6},
		{"a month of 64 vCPU at 0.05 stays exact", Usage{CPUMinutesM: 64000 * 60 * 24 * 31}, Prices{VCPUHour: 50_000}, false, 0, 2, 238080},
	} {
		if got := Amount(tc.u, tc.p, tc.fixed, tc.markup, tc.digits); got != tc.want {
			t.Errorf("%s: Amount = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestMoneyFormatsAndParses(t *testing.T) {
	for _, tc := range []struct {
		minor  int64
		digits int
		want   string
	}{{0, 2, "0.00"}, {5, 2, "0.05"}, {1205, 2, "12.05"}, {-50, 2, "-0.50"}, {1200, 0, "1200"}} {
		if got := FormatMinor(tc.minor, tc.digits); got != tc.want {
			t.Errorf("FormatMinor(%d, %d) = %q, want %q", tc.minor, tc.digits, got, tc.want)
		}
	}
	for in, want := range map[string]int64{"0.035": 35_000, "12": 12_000_000, ".5": 500_000, "0.000001": 1, "": 0, " 3.10 ": 3_100_000} {
		got, err := ParseMicros(in)
		if err != nil || got != want {
			t.Errorf("ParseMicros(%q) = %d, %v; want %d", in, got, err, want)
		}
		if in != "" && in != " 3.10 " && in != ".5" {
			if back, _ := ParseMicros(FormatMicros(got)); back != got {
				t.Errorf("FormatMicros(%d) = %q does not read back", got, FormatMicros(got))
			}
		}
	}
	for _, in := range []string{"-1", "1e3", "0.0000001", "abc", "1.2.3", "1234567890123"} {
		if _, err := ParseMicros(in); err == nil {
			t.Errorf("ParseMicros(%q) was accepted", in)
		}
	}
	if FormatMicros(12_000_000) != "12.00" || FormatMicros(35_000) != "0.035" {
		t.Errorf("FormatMicros: %q %q", FormatMicros(12_000_000), FormatMicros(35_000))
	}
}

func TestSignatureVerifies(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"evt_1"}`)
	h := Sign("a-secret-of-16-chars", now, body)
	if !strings.HasPrefix(h, "t=1800000000,v1=") {
		t.Fatalf("header %q", h)
	}
	if err := Verify("a-secret-of-16-chars", h, body, now.Add(time.Minute), 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"another secret": Verify("another-secret-16-chars", h, body, now, 5*time.Minute),
		"another body":   Verify("a-secret-of-16-chars", h, []byte(`{"id":"evt_2"}`), now, 5*time.Minute),
		"too late":       Verify("a-secret-of-16-chars", h, body, now.Add(10*time.Minute), 5*time.Minute),
		"no header":      Verify("a-secret-of-16-chars", "", body, now, 5*time.Minute),
	} {
		if err == nil {
			t.Errorf("%s: verified", name)
		}
	}
}

func TestPeriodOf(t *testing.T) {
	s, e := PeriodOf(time.Date(2026, 12, 31, 23, 59, 59, 0, time.FixedZone("x", -3600)))
	if !s.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) || !e.Equal(time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("period %v – %v", s, e)
	}
}
