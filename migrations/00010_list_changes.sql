-- +goose Up
-- Every change to what the region lists and the region API show is announced on the
-- channel runr_lists (statement-level: one notification per statement, and PostgreSQL
-- folds identical notifications of one transaction into one, delivered at commit). The
-- consoles keep rendered list pages until then (handlers/listcache.go).
-- +goose StatementBegin
CREATE FUNCTION runr_notify_lists() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('runr_lists', '');
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER regions_notify_lists AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON regions
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER projects_notify_lists AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON projects
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER settings_notify_lists AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON settings
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER tenants_notify_lists AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON tenants
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER region_assignments_notify_lists AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON region_assignments
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER registry_setups_notify_lists AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON registry_setups
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_lists();
-- The list's pending setups show their job's status.
CREATE TRIGGER jobs_notify_lists AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION runr_notify_lists();

-- +goose Down
DROP TRIGGER jobs_notify_lists ON jobs;
DROP TRIGGER registry_setups_notify_lists ON registry_setups;
DROP TRIGGER region_assignments_notify_lists ON region_assignments;
DROP TRIGGER tenants_notify_lists ON tenants;
DROP TRIGGER settings_notify_lists ON settings;
DROP TRIGGER projects_notify_lists ON projects;
DROP TRIGGER regions_notify_lists ON regions;
DROP FUNCTION runr_notify_lists();
