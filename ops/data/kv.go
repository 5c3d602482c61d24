package data

import (
	"context"
	"fmt"
	"strings"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// KV runs on the region's Redis (managed or external): each binding is a Redis ACL user
// allowed only the keys and channels under its own prefix, set and removed by Jobs in
// runr-data that run redis-cli with the region's Redis password (the console never
// connects to the cluster's network).

// redisHostPort splits the region's Redis address.
func redisHostPort(addr string) (string, string) {
	if i := strings.LastIndex(addr, ":"); i > 0 {
		return addr[:i], addr[i+1:]
	}
	return addr, "6379"
}

// kvRedisCLI is the redis-cli invocation of the Jobs, as the region's default user.
const kvRedisCLI = `redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" --no-auth-warning -a "$REDIS_PASSWORD"`

// kvAdminEnv is the env of the ACL Jobs: the region Redis from runr-kv-admin.
func kvAdminEnv() map[string]map[string]string {
	return map[string]map[string]string{KVAdminSecret: {"REDIS_HOST": "host", "REDIS_PORT": "port", "REDIS_PASSWORD": "password"}}
}

func (s *Service) kvInstallSteps() []engine.Step {
	return []engine.Step{
		s.RegionStep("redis", "Give the ACL Jobs the region's Redis", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			if r.RedisStatus != store.ComponentReady || r.RedisAddress == "" {
				return fmt.Errorf("the region's Redis is not ready (%s): set it up in the Redis tab first", r.RedisStatus)
			}
			if _, err := kit.EnsureNamespace(ctx, jc, c, DataNamespace, nil); err != nil {
				return err
			}
			host, port := redisHostPort(r.RedisAddress)
			if err := applySecret(ctx, c, DataNamespace, KVAdminSecret, nil, map[string]string{"host": host, "port": port, "password": r.RedisPassword}); err != nil {
				return err
			}
			jc.Note("Secret %s/%s holds the address of the region's Redis (%s) for the ACL Jobs", DataNamespace, KVAdminSecret, r.RedisAddress)
			return nil
		}),
		s.RegionStep("acl", "Check that the Redis has ACL users", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			script := `out=$(` + kvRedisCLI + ` ACL WHOAMI 2>&1)
case "$out" in ""|ERR*|*"unknown command"*|*NOAUTH*|*WRONGPASS*) echo "ACL WHOAMI: $out" >&2; exit 1;; esac`
			if err := s.runDataJob(ctx, jc, c, DataJob{Name: "runr-kv-check", Image: s.Cfg.RedisImage, Script: script, Secrets: kvAdminEnv(),
				What: "run ACL WHOAMI on " + r.RedisAddress, Hint: "KV needs Redis 6 or newer (ACL users) and the region's Redis password"}); err != nil {
				return err
			}
			jc.Note("The Redis at %s has ACL users: each binding gets its own, limited to its key prefix", r.RedisAddress)
			return nil
		}),
	}
}

func (s *Service) kvRemoveSteps() []engine.Step {
	return []engine.Step{
		s.RegionStep("remove", "Remove the ACL Jobs' Secret", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			if err := kit.DeleteSecret(ctx, c, DataNamespace, KVAdminSecret); err != nil {
				return err
			}
			jc.Note("KV removed; the region's Redis itself stays (Redis tab)")
			return nil
		}),
	}
}

// kvCredentials are a KV binding's connection settings: its own user, password and
// key prefix on the region's Redis.
func kvCredentials(r *store.Region, p *store.Project) (resource string, creds map[string]string) {
	user, prefix, pw := "runr-"+p.Slug, p.Slug+":", randomSecret()
	host, port := redisHostPort(r.RedisAddress)
	return user, map[string]string{
		"REDIS_HOST": host, "REDIS_PORT": port, "REDIS_USERNAME": user, "REDIS_PASSWORD": pw, "REDIS_KEY_PREFIX": prefix,
		"REDIS_URL": fmt.Sprintf("redis://%s:%s@%s:%s/0", user, pw, host, port),
	}
}

// kvUserEnv is the env of a binding's ACL Job: its user, password and prefix from its
// Secret in runr-data.
func kvUserEnv(b *store.Binding) map[string]map[string]string {
	env := kvAdminEnv()
	env[bindingSecretName(b)] = map[string]string{"KV_USER": "REDIS_USERNAME", "KV_PASSWORD": "REDIS_PASSWORD", "KV_PREFIX": "REDIS_KEY_PREFIX"}
	return env
}

// kvBind sets the binding's ACL user: its password, its keys and channels (its prefix),
// every command but the admin and dangerous ones.
func (s *Service) kvBind(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region, b *store.Binding) error {
	if err := s.bindingSecret(ctx, c, b); err != nil {
		return err
	}
	script := `test "$(` + kvRedisCLI + ` ACL SETUSER "$KV_USER" reset on ">$KV_PASSWORD" "~$KV_PREFIX*" "&$KV_PREFIX*" +@all -@admin -@dangerous)" = OK`
	if err := s.runDataJob(ctx, jc, c, DataJob{Name: bindingJobName(b, "set"), Image: s.Cfg.RedisImage, Script: script, Env: nil, Secrets: kvUserEnv(b),
		What: "set Redis user " + b.Resource + " on " + r.RedisAddress}); err != nil {
		return err
	}
	jc.Note("Redis user %s may use the keys and channels %s* only", b.Resource, b.Credentials["REDIS_KEY_PREFIX"])
	return nil
}

// kvUnbind deletes the binding's keys and its ACL user.
func (s *Service) kvUnbind(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region, b *store.Binding) error {
	if err := s.bindingSecret(ctx, c, b); err != nil {
		return err
	}
	script := kvRedisCLI + ` --scan --pattern "$KV_PREFIX*" | while read -r key; do ` + kvRedisCLI + ` UNLINK "$key" >/dev/null; done
` + kvRedisCLI + ` ACL DELUSER "$KV_USER" >/dev/null`
	if err := s.runDataJob(ctx, jc, c, DataJob{Name: bindingJobName(b, "drop"), Image: s.Cfg.RedisImage, Script: script, Secrets: kvUserEnv(b),
		What: "delete the keys " + b.Credentials["REDIS_KEY_PREFIX"] + "* and Redis user " + b.Resource}); err != nil {
		return err
	}
	jc.Note("Deleted the keys %s* and Redis user %s", b.Credentials["REDIS_KEY_PREFIX"], b.Resource)
	return kit.DeleteSecret(ctx, c, DataNamespace, bindingSecretName(b))
}
