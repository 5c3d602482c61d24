package knative

import "runr.dev/console/ops/kit"

// validNamespace returns the namespace to use ("" is def), or why ns is not one.
func validNamespace(ns, def string) (string, string) {
	if ns == "" {
		return def, ""
	}
	if m := kit.ValidateRegionName(ns); m != "" {
		return "", "Not a valid namespace name: " + m
	}
	return ns, ""
}
