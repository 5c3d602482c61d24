-- +goose Up
-- Every change to what the region lists and the region API show is announced on the
-- channel runr_lists (row-level, so that a statement that changes no row, such as a
-- runner's poll for a queued job, announces nothing; PostgreSQL folds the identical
-- notifications of one transaction into one, delivered at commit). The
-- consoles keep rendered list pages (handlers/listcache.go) and the credentials they
-- read (web/credcache.go) until then.
-- +goose StatementBegin
CREATE FUNCTION runr_notify_lists() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('runr_lists', '');
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER regions_notify_lists AFTER INSERT OR UPDATE OR DELETE ON regions
    FOR EACH ROW EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER regions_truncate_notify_lists AFTER TRUNCATE ON regions
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER projects_notify_lists AFTER INSERT OR UPDATE OR DELETE ON projects
    FOR EACH ROW EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER projects_truncate_notify_lists AFTER TRUNCATE ON projects
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER settings_notify_lists AFTER INSERT OR UPDATE OR DELETE ON settings
    FOR EACH ROW EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER settings_truncate_notify_lists AFTER TRUNCATE ON settings
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER tenants_notify_lists AFTER INSERT OR UPDATE OR DELETE ON tenants
    FOR EACH ROW EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER tenants_truncate_notify_lists AFTER TRUNCATE ON tenants
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER region_assignments_notify_lists AFTER INSERT OR UPDATE OR DELETE ON region_assignments
    FOR EACH ROW EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER region_assignments_truncate_notify_lists AFTER TRUNCATE ON region_assignments
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER registry_setups_notify_lists AFTER INSERT OR UPDATE OR DELETE ON registry_setups
    FOR EACH ROW EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER registry_setups_truncate_notify_lists AFTER TRUNCATE ON registry_setups
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_lists();
-- The list's pending setups show their job's status.
CREATE TRIGGER jobs_notify_lists AFTER INSERT OR UPDATE OR DELETE ON jobs
    FOR EACH ROW EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER jobs_truncate_notify_lists AFTER TRUNCATE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_lists();
-- The credentials every request reads (web/credcache.go).
CREATE TRIGGER users_notify_lists AFTER INSERT OR UPDATE OR DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER users_truncate_notify_lists AFTER TRUNCATE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER api_tokens_notify_lists AFTER INSERT OR UPDATE OR DELETE ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER api_tokens_truncate_notify_lists AFTER TRUNCATE ON api_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER sessions_notify_lists AFTER INSERT OR UPDATE OR DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER sessions_truncate_notify_lists AFTER TRUNCATE ON sessions
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_lists();

-- What a region's page shows besides (its latest job's steps, the agent's snapshot) is
-- announced on runr_region_pages. Job events need no trigger: each one is announced on
-- runr_job_events already (store.AddEvent), which the hub passes on to the same cache.
-- +goose StatementBegin
CREATE FUNCTION runr_notify_region_pages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('runr_region_pages', '');
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER job_steps_notify_region_pages AFTER INSERT OR UPDATE OR DELETE ON job_steps
    FOR EACH ROW EXECUTE FUNCTION runr_notify_region_pages();
CREATE TRIGGER job_steps_truncate_notify_region_pages AFTER TRUNCATE ON job_steps
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_region_pages();
CREATE TRIGGER metric_snapshots_notify_region_pages AFTER INSERT OR UPDATE OR DELETE ON metric_snapshots
    FOR EACH ROW EXECUTE FUNCTION runr_notify_region_pages();
CREATE TRIGGER metric_snapshots_truncate_notify_region_pages AFTER TRUNCATE ON metric_snapshots
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_region_pages();

-- +goose Down
DROP TRIGGER job_steps_truncate_notify_region_pages ON job_steps;
DROP TRIGGER job_steps_notify_region_pages ON job_steps;
DROP TRIGGER metric_snapshots_truncate_notify_region_pages ON metric_snapshots;
DROP TRIGGER metric_snapshots_notify_region_pages ON metric_snapshots;
DROP FUNCTION runr_notify_region_pages();
DROP TRIGGER sessions_truncate_notify_lists ON sessions;
DROP TRIGGER sessions_notify_lists ON sessions;
DROP TRIGGER api_tokens_truncate_notify_lists ON api_tokens;
DROP TRIGGER api_tokens_notify_lists ON api_tokens;
DROP TRIGGER users_truncate_notify_lists ON users;
DROP TRIGGER users_notify_lists ON users;
DROP TRIGGER jobs_truncate_notify_lists ON jobs;
DROP TRIGGER jobs_notify_lists ON jobs;
DROP TRIGGER registry_setups_truncate_notify_lists ON registry_setups;
DROP TRIGGER registry_setups_notify_lists ON registry_setups;
DROP TRIGGER region_assignments_truncate_notify_lists ON region_assignments;
DROP TRIGGER region_assignments_notify_lists ON region_assignments;
DROP TRIGGER tenants_truncate_notify_lists ON tenants;
DROP TRIGGER tenants_notify_lists ON tenants;
DROP TRIGGER settings_truncate_notify_lists ON settings;
DROP TRIGGER settings_notify_lists ON settings;
DROP TRIGGER projects_truncate_notify_lists ON projects;
DROP TRIGGER projects_notify_lists ON projects;
DROP TRIGGER regions_truncate_notify_lists ON regions;
DROP TRIGGER regions_notify_lists ON regions;
DROP FUNCTION runr_notify_lists();
