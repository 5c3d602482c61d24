package supplychain

import "strings"

// Severities of vulnerability findings the gate knows, highest first; a finding of another
// (negligible, unknown, none) counts below low.
var Severities = []string{"critical", "high", "medium", "low"}

// rank orders a severity: critical 4, high 3, medium 2 (moderate too), low 1, else 0.
func rank(s string) int {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "critical":
		return 4
	case "high", "important":
		return 3
	case "medium", "moderate":
		return 2
	case "low":
		return 1
	}
	return 0
}

// ValidSeverity reports whether s is one of Severities.
func ValidSeverity(s string) bool { return rank(s) > 0 && s == strings.ToLower(s) }

// normalSeverity names a scanner's severity by one of Severities, "" below low.
func normalSeverity(s string) string {
	if r := rank(s); r > 0 {
		return Severities[4-r]
	}
	return ""
}

// AtOrAbove reports whether a finding's severity is at or above the threshold.
func AtOrAbove(severity, threshold string) bool {
	return rank(severity) > 0 && rank(severity) >= rank(threshold)
}
