package kube

import "testing"

func TestReleaseWorkloads(t *testing.T) {
	manifest := `---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: runr-zot, namespace: runr-registry}
---
apiVersion: v1
kind: Service
metadata: {name: runr-zot}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: no-namespace}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: knative-prometheus-node-exporter, namespace: observability}
---
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: knative-kube-prometheus-st-prometheus, namespace: observability}
`
	ws, err := ReleaseWorkloads(manifest, "rel-ns")
	if err != nil {
		t.Fatal(err)
	}
	want := []Workload{
		{"StatefulSet", "runr-registry", "runr-zot"},
		{"Deployment", "rel-ns", "no-namespace"},
		{"DaemonSet", "observability", "knative-prometheus-node-exporter"},
		{"Prometheus", "observability", "knative-kube-prometheus-st-prometheus"},
	}
	if len(ws) != len(want) {
		t.Fatalf("workloads = %v, want %v", ws, want)
	}
	for i := range want {
		if ws[i] != want[i] {
			t.Errorf("workload %d = %v, want %v", i, ws[i], want[i])
		}
	}
}
