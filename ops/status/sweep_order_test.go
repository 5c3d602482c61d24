package status

import (
	"slices"
	"testing"

	"runr.dev/console/store"
)

// The shards with the most looks that failed last time are offered first, the others
// in the process's own round from its offset.
func TestShardOrderPutsFailingShardsFirst(t *testing.T) {
	failingIn := []int{0, 2, 0, 5, 0, 2}
	got := shardOrder(failingIn, 4)
	want := []int{3, 5, 1, 4, 0, 2}
	if !slices.Equal(got, want) {
		t.Fatalf("shardOrder = %v, want %v", got, want)
	}
	if got := shardOrder(make([]int, 4), 2); !slices.Equal(got, []int{2, 3, 0, 1}) {
		t.Fatalf("without failures the order is the round from the offset; got %v", got)
	}
}

// The regions of a cluster that failed its last check are swept in the first pass, all
// of them (a region added since shares the look); the others in the second.
func TestPartsOfSplitsFailingClusters(t *testing.T) {
	p := partsOf([]store.SweepTarget{
		{ID: "a1", ClusterKey: "a", Failing: true}, {ID: "a2", ClusterKey: "a"},
		{ID: "b1", ClusterKey: "b"}, {ID: "c1", ClusterKey: "c", Failing: true},
	})
	var failing, others []string
	for i := range p.failing {
		failing = append(failing, p.failing[i]...)
		others = append(others, p.others[i]...)
	}
	slices.Sort(failing)
	if !slices.Equal(failing, []string{"a1", "a2", "c1"}) || !slices.Equal(others, []string{"b1"}) {
		t.Fatalf("failing %v, others %v; want [a1 a2 c1] and [b1]", failing, others)
	}
	if !slices.Contains(p.failing[shardOf("a")], "a2") {
		t.Fatalf("a2 is not in its cluster's shard")
	}
}
