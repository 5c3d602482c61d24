package redis

import (
	"reflect"
	"testing"

	"runr.dev/console/store"
)

// TestValidate: each mode asks for its own address; a Redis in the cluster is a
// Service's name with a port, never an outside host.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		mode    store.RedisMode
		address string
		field   string // "" when accepted
	}{
		{store.RedisManaged, "", ""},
		{store.RedisNone, "", ""},
		{store.RedisExternal, "redis.example.com:6379", ""},
		{store.RedisExternal, "redis.example.com", "address"},
		{store.RedisInCluster, "redis.queues.svc:6379", ""},
		{store.RedisInCluster, "redis-master.queues.svc.cluster.local:6380", ""},
		{store.RedisInCluster, "redis.queues.svc", "address"},
		{store.RedisInCluster, "redis.queues:6379", "address"},
		{store.RedisInCluster, "redis.example.com:6379", "address"},
		{store.RedisInCluster, "Redis.Queues.svc:6379", "address"},
		{store.RedisInCluster, "redis.queues.svc:70000", "address"},
		{"cloud", "", "mode"},
	} {
		errs := Validate(tc.mode, tc.address)
		var want map[string]string
		if tc.field != "" {
			want = map[string]string{tc.field: errs[tc.field]}
		}
		if (tc.field == "") != (errs == nil) || !reflect.DeepEqual(errs, want) || (tc.field != "" && errs[tc.field] == "") {
			t.Errorf("%s %q: %v, want an error on %q", tc.mode, tc.address, errs, tc.field)
		}
	}
}
