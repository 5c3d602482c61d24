package nodes

import (
	"reflect"
	"sort"
	"testing"
)

func TestValidateOvercommit(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name string
		in   OvercommitInput
		want []string
	}{
		{"both", OvercommitInput{CPU: f(1), Memory: f(10)}, nil},
		{"one", OvercommitInput{Memory: f(1.5)}, nil},
		{"none", OvercommitInput{}, []string{"faas_cpu_overcommit"}},
		{"out of range", OvercommitInput{CPU: f(0.5), Memory: f(11)}, []string{"faas_cpu_overcommit", "faas_memory_overcommit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fieldKeys(validateOvercommit(tc.in)); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("fields %v, want %v", got, tc.want)
			}
		})
	}
}

// fieldKeys are the fields with an error, sorted (nil for none).
func fieldKeys(errs map[string]string) []string {
	var out []string
	for k := range errs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
