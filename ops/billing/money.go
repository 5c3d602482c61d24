package billing

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Money is exact. Prices are integer micros: millionths of the currency's unit (a price
// of 0.035 per vCPU-hour is 35000). Quantities are integer usage-minutes. An amount is
// priced as one exact fraction and rounded once, half up, to the currency's minor unit
// (cents) — per charge; a bill's total is the sum of its rounded lines.

// Prices are what a region charges, in micros: per vCPU-hour, per GiB-hour of memory,
// per GPU-hour, and a fixed region's price per period for its allocation.
type Prices struct {
	VCPUHour      int64 `json:"vcpu_hour_micros"`
	MemoryGiBHour int64 `json:"memory_gib_hour_micros"`
	GPUHour       int64 `json:"gpu_hour_micros"`
	FixedPeriod   int64 `json:"fixed_period_micros"`
}

// Usage is what was used, summed over minutes: millicore-minutes of CPU, MiB-minutes of
// memory and GPU-minutes.
type Usage struct {
	CPUMinutesM     int64 `json:"cpu_minutes_m"`
	MemoryMinutesMi int64 `json:"memory_minutes_mi"`
	GPUMinutes      int64 `json:"gpu_minutes"`
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.CPUMinutesM + v.CPUMinutesM, u.MemoryMinutesMi + v.MemoryMinutesMi, u.GPUMinutes + v.GPUMinutes}
}

// minuteDenominator is the common denominator of the three usage prices in micros:
// millicores per vCPU (1000), MiB per GiB (1024), minutes per hour (60).
const minuteDenominator = 1000 * 1024 * 60

// Amount prices a usage (and, fixed, the allocation's price for the period) with a markup
// in basis points (1500 is 15 %), rounded half up to minor units of a currency with
// digits decimals.
func Amount(u Usage, p Prices, fixed bool, markupBP int64, digits int) int64 {
	n := new(big.Int)
	term := func(q, price, scale int64) {
		t := new(big.Int).Mul(big.NewInt(q), big.NewInt(price))
		n.Add(n, t.Mul(t, big.NewInt(scale)))
	}
	term(u.CPUMinutesM, p.VCPUHour, 1024)
	term(u.MemoryMinutesMi, p.MemoryGiBHour, 1000)
	term(u.GPUMinutes, p.GPUHour, 1000*1024)
	if fixed {
		term(1, p.FixedPeriod, minuteDenominator)
	}
	n.Mul(n, big.NewInt(10000+markupBP))
	// micros → minor units: 10^(6-digits) micros make one minor unit.
	d := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(6-digits)), nil)
	d.Mul(d, big.NewInt(minuteDenominator*10000))
	q, r := new(big.Int).QuoRem(n, d, new(big.Int))
	if r.Mul(r, big.NewInt(2)).Cmp(d) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// currencyDigits are the currencies a console may bill in, with their minor-unit digits
// (ISO 4217).
var currencyDigits = map[string]int{
	"EUR": 2, "USD": 2, "GBP": 2, "CHF": 2, "CAD": 2, "AUD": 2, "SEK": 2, "NOK": 2, "DKK": 2,
	"PLN": 2, "CZK": 2, "INR": 2, "BRL": 2, "CNY": 2, "JPY": 0, "KRW": 0,
}

// Digits returns a currency's minor-unit digits (ok false for one the console does not bill in).
func Digits(currency string) (int, bool) {
	d, ok := currencyDigits[currency]
	return d, ok
}

// Currencies lists the currencies a console may bill in.
func Currencies() []string {
	return []string{"EUR", "USD", "GBP", "CHF", "CAD", "AUD", "SEK", "NOK", "DKK", "PLN", "CZK", "INR", "BRL", "CNY", "JPY", "KRW"}
}

// FormatMinor writes an amount in minor units as a decimal ("12.05", "-0.50", "1200").
func FormatMinor(minor int64, digits int) string {
	sign := ""
	if minor < 0 {
		sign, minor = "-", -minor
	}
	if digits == 0 {
		return sign + strconv.FormatInt(minor, 10)
	}
	s := fmt.Sprintf("%0*d", digits+1, minor)
	return sign + s[:len(s)-digits] + "." + s[len(s)-digits:]
}

// FormatMicros writes a price in micros as a decimal without trailing zeros beyond
// two places ("0.035", "12.00").
func FormatMicros(micros int64) string {
	s := FormatMinor(micros, 6)
	for strings.HasSuffix(s, "0") && len(s)-strings.Index(s, ".") > 3 {
		s = s[:len(s)-1]
	}
	return s
}

// ParseMicros reads a price written as a decimal of at most six places ("0.035") into
// micros; a negative, malformed or too precise one is refused with what to write.
func ParseMicros(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" {
		whole = "0"
	}
	if strings.Trim(whole, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" {
		return 0, fmt.Errorf("write a price as a number such as 0.035, not %q", s)
	}
	if len(frac) > 6 {
		return 0, fmt.Errorf("a price has at most six decimal places, %q has %d", s, len(frac))
	}
	if len(whole) > 12 {
		return 0, fmt.Errorf("%q is more than a price can be", s)
	}
	w, _ := strconv.ParseInt(whole, 10, 64)
	f, _ := strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
	return w*1_000_000 + f, nil
}
