-- +goose Up
-- Tenancy (RUNR_TENANCY=on): tenants with their own users, tenant-owned regions,
-- assignments of platform regions to tenants with quotas, and walls between tenants
-- in the database itself (row-level security). Without tenants nothing changes: every
-- row is the platform's (tenant_id NULL) and the platform sees every row.

-- runr_tenant() is the tenant whose walls a statement runs in (NULL: the platform). The
-- console sets runr.tenant_id with set_config(..., true) inside a transaction.
-- +goose StatementBegin
CREATE FUNCTION runr_tenant() RETURNS TEXT LANGUAGE sql STABLE AS $$
    SELECT NULLIF(current_setting('runr.tenant_id', true), '')
$$;
-- +goose StatementEnd

CREATE TABLE tenants (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX tenants_name_key ON tenants (lower(name));

-- A user belongs to the platform (NULL) or to exactly one tenant; a row written in a
-- tenant's walls is that tenant's.
ALTER TABLE users ADD COLUMN tenant_id TEXT REFERENCES tenants (id) ON DELETE CASCADE DEFAULT runr_tenant();
CREATE INDEX users_tenant_idx ON users (tenant_id);

-- A platform region (NULL) or a tenant-owned region. region_mode decides whether tenant
-- quotas apply on a platform region: managed (they do; the default) or shared (no
-- quota enforcement) — the spec's table of modes was lost.
ALTER TABLE regions ADD COLUMN tenant_id TEXT REFERENCES tenants (id) DEFAULT runr_tenant();
ALTER TABLE regions ADD COLUMN region_mode TEXT NOT NULL DEFAULT 'managed' CHECK (region_mode IN ('managed', 'shared'));
CREATE INDEX regions_tenant_idx ON regions (tenant_id);

ALTER TABLE projects ADD COLUMN tenant_id TEXT REFERENCES tenants (id) DEFAULT runr_tenant();
CREATE INDEX projects_tenant_idx ON projects (tenant_id, region_id);

ALTER TABLE jobs ADD COLUMN tenant_id TEXT REFERENCES tenants (id) ON DELETE CASCADE DEFAULT runr_tenant();
CREATE INDEX jobs_tenant_idx ON jobs (tenant_id);

ALTER TABLE registry_setups ADD COLUMN tenant_id TEXT REFERENCES tenants (id) ON DELETE CASCADE DEFAULT runr_tenant();

-- A job on a tenant-owned region is the tenant's, whoever queued it (the status
-- check's, a platform user's).
-- +goose StatementBegin
CREATE FUNCTION runr_job_tenant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.tenant_id IS NULL AND NEW.region_id IS NOT NULL THEN
        SELECT r.tenant_id INTO NEW.tenant_id FROM regions r WHERE r.id = NEW.region_id;
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER jobs_tenant BEFORE INSERT OR UPDATE OF region_id ON jobs FOR EACH ROW EXECUTE FUNCTION runr_job_tenant();

-- A platform region assigned to a tenant, with its quotas (CPU in cores, memory in GiB;
-- 0 sets no limit). Removing the region or the tenant removes the assignment.
CREATE TABLE region_assignments (
    region_id  TEXT NOT NULL REFERENCES regions (id) ON DELETE CASCADE,
    tenant_id  TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    cpu        DOUBLE PRECISION NOT NULL DEFAULT 0 CHECK (cpu >= 0),
    memory_gib DOUBLE PRECISION NOT NULL DEFAULT 0 CHECK (memory_gib >= 0),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (region_id, tenant_id)
);
CREATE INDEX region_assignments_tenant_idx ON region_assignments (tenant_id);

-- A tenant-owned region is never assigned.
-- +goose StatementBegin
CREATE FUNCTION runr_assignment_platform_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM regions r WHERE r.id = NEW.region_id AND r.tenant_id IS NOT NULL) THEN
        RAISE EXCEPTION 'region % belongs to a tenant and is never assigned', NEW.region_id USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER region_assignments_platform_only BEFORE INSERT OR UPDATE ON region_assignments
    FOR EACH ROW EXECUTE FUNCTION runr_assignment_platform_only();

-- The walls. Every policy lets the platform (runr_tenant() NULL) through; in a tenant's
-- walls only its own rows exist. FORCE makes them hold for the tables' owner too (the
-- console's role owns the tables); a role that bypasses row-level security (a superuser)
-- is switched to runr_tenant inside a tenant's walls (see store/scope.go).
ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenants FORCE ROW LEVEL SECURITY;
CREATE POLICY tenants_walls ON tenants USING (runr_tenant() IS NULL OR id = runr_tenant()) WITH CHECK (runr_tenant() IS NULL);

ALTER TABLE users ENABLE ROW LEVEL SECURITY;
ALTER TABLE users FORCE ROW LEVEL SECURITY;
CREATE POLICY users_walls ON users USING (runr_tenant() IS NULL OR tenant_id = runr_tenant());

ALTER TABLE api_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_tokens FORCE ROW LEVEL SECURITY;
CREATE POLICY api_tokens_walls ON api_tokens USING (runr_tenant() IS NULL OR EXISTS (SELECT 1 FROM users u WHERE u.id = user_id));

-- A tenant reads its own regions and the platform regions assigned to it, and changes
-- only its own: platform regions are read-only in its walls.
ALTER TABLE regions ENABLE ROW LEVEL SECURITY;
ALTER TABLE regions FORCE ROW LEVEL SECURITY;
CREATE POLICY regions_read ON regions FOR SELECT USING (runr_tenant() IS NULL OR tenant_id = runr_tenant()
    OR EXISTS (SELECT 1 FROM region_assignments a WHERE a.region_id = regions.id AND a.tenant_id = runr_tenant()));
CREATE POLICY regions_insert ON regions FOR INSERT WITH CHECK (runr_tenant() IS NULL OR tenant_id = runr_tenant());
CREATE POLICY regions_update ON regions FOR UPDATE USING (runr_tenant() IS NULL OR tenant_id = runr_tenant());
CREATE POLICY regions_delete ON regions FOR DELETE USING (runr_tenant() IS NULL OR tenant_id = runr_tenant());

ALTER TABLE region_assignments ENABLE ROW LEVEL SECURITY;
ALTER TABLE region_assignments FORCE ROW LEVEL SECURITY;
CREATE POLICY region_assignments_walls ON region_assignments USING (runr_tenant() IS NULL OR tenant_id = runr_tenant())
    WITH CHECK (runr_tenant() IS NULL);

ALTER TABLE projects ENABLE ROW LEVEL SECURITY;
ALTER TABLE projects FORCE ROW LEVEL SECURITY;
CREATE POLICY projects_walls ON projects USING (runr_tenant() IS NULL OR tenant_id = runr_tenant());

ALTER TABLE jobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE jobs FORCE ROW LEVEL SECURITY;
CREATE POLICY jobs_walls ON jobs USING (runr_tenant() IS NULL OR tenant_id = runr_tenant());

ALTER TABLE job_steps ENABLE ROW LEVEL SECURITY;
ALTER TABLE job_steps FORCE ROW LEVEL SECURITY;
CREATE POLICY job_steps_walls ON job_steps USING (runr_tenant() IS NULL OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = job_id));

ALTER TABLE job_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE job_events FORCE ROW LEVEL SECURITY;
CREATE POLICY job_events_walls ON job_events USING (runr_tenant() IS NULL OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = job_id));

ALTER TABLE registry_setups ENABLE ROW LEVEL SECURITY;
ALTER TABLE registry_setups FORCE ROW LEVEL SECURITY;
CREATE POLICY registry_setups_walls ON registry_setups USING (runr_tenant() IS NULL OR tenant_id = runr_tenant());

-- What a region's cluster reports (its namespaces, pods and events: other tenants'
-- projects on a shared one) is read only for the tenant's own regions.
ALTER TABLE metric_snapshots ENABLE ROW LEVEL SECURITY;
ALTER TABLE metric_snapshots FORCE ROW LEVEL SECURITY;
CREATE POLICY metric_snapshots_walls ON metric_snapshots USING (runr_tenant() IS NULL
    OR EXISTS (SELECT 1 FROM regions r WHERE r.id = region_id AND r.tenant_id = runr_tenant()));
ALTER TABLE pod_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE pod_sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY pod_sessions_walls ON pod_sessions USING (runr_tenant() IS NULL
    OR EXISTS (SELECT 1 FROM regions r WHERE r.id = region_id AND r.tenant_id = runr_tenant()));
ALTER TABLE kube_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE kube_events FORCE ROW LEVEL SECURITY;
CREATE POLICY kube_events_walls ON kube_events USING (runr_tenant() IS NULL
    OR EXISTS (SELECT 1 FROM regions r WHERE r.id = region_id AND r.tenant_id = runr_tenant()));
ALTER TABLE region_log_settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE region_log_settings FORCE ROW LEVEL SECURITY;
CREATE POLICY region_log_settings_walls ON region_log_settings USING (runr_tenant() IS NULL
    OR EXISTS (SELECT 1 FROM regions r WHERE r.id = region_id AND r.tenant_id = runr_tenant()));

-- Supply chain verdicts (migration 00008) are read for the tenant's own regions only.
ALTER TABLE supply_chain_verdicts ENABLE ROW LEVEL SECURITY;
ALTER TABLE supply_chain_verdicts FORCE ROW LEVEL SECURITY;
CREATE POLICY supply_chain_verdicts_walls ON supply_chain_verdicts USING (runr_tenant() IS NULL
    OR EXISTS (SELECT 1 FROM regions r WHERE r.id = region_id AND r.tenant_id = runr_tenant()));

-- The platform settings are read by everyone and changed by the platform only.
ALTER TABLE settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE settings FORCE ROW LEVEL SECURITY;
CREATE POLICY settings_read ON settings FOR SELECT USING (true);
CREATE POLICY settings_write ON settings FOR ALL USING (runr_tenant() IS NULL) WITH CHECK (runr_tenant() IS NULL);

-- runr_tenant is the role a tenant's statements run as when the console's own role
-- bypasses row-level security (a superuser, as `make run` and the tests use): it holds
-- the console's tables and nothing else. Creating it needs CREATEROLE; without it the
-- console relies on FORCE ROW LEVEL SECURITY alone (its role must then not bypass it).
-- +goose StatementBegin
DO $$
BEGIN
    BEGIN
        CREATE ROLE runr_tenant NOLOGIN NOSUPERUSER NOBYPASSRLS;
    EXCEPTION
        WHEN duplicate_object THEN NULL;
        WHEN insufficient_privilege THEN
            RAISE NOTICE 'role runr_tenant not created (no CREATEROLE): the tables rely on FORCE ROW LEVEL SECURITY';
            RETURN;
    END;
    -- A role that is no superuser switches to runr_tenant only as its member.
    BEGIN
        EXECUTE format('GRANT runr_tenant TO %I', current_user);
    EXCEPTION WHEN insufficient_privilege OR invalid_grant_operation THEN NULL;
    END;
    GRANT USAGE ON SCHEMA public TO runr_tenant;
    GRANT SELECT, INSERT, UPDATE, DELETE ON users, api_tokens, tenants, regions, region_assignments, projects, jobs,
        job_steps, job_events, registry_setups, metric_snapshots, pod_sessions, kube_events, region_log_settings,
        settings, sessions, login_failures, fleet_tasks, supply_chain_verdicts TO runr_tenant;
    GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO runr_tenant;
    ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO runr_tenant;
    ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO runr_tenant;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'runr_tenant') THEN
        ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON TABLES FROM runr_tenant;
        ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON SEQUENCES FROM runr_tenant;
        REVOKE ALL ON ALL TABLES IN SCHEMA public FROM runr_tenant;
        REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM runr_tenant;
        REVOKE USAGE ON SCHEMA public FROM runr_tenant;
    END IF;
END
$$;
-- +goose StatementEnd
DROP POLICY supply_chain_verdicts_walls ON supply_chain_verdicts;
ALTER TABLE supply_chain_verdicts NO FORCE ROW LEVEL SECURITY;
ALTER TABLE supply_chain_verdicts DISABLE ROW LEVEL SECURITY;
DROP POLICY settings_write ON settings;
DROP POLICY settings_read ON settings;
ALTER TABLE settings DISABLE ROW LEVEL SECURITY;
ALTER TABLE settings NO FORCE ROW LEVEL SECURITY;
DROP POLICY region_log_settings_walls ON region_log_settings;
ALTER TABLE region_log_settings DISABLE ROW LEVEL SECURITY;
ALTER TABLE region_log_settings NO FORCE ROW LEVEL SECURITY;
DROP POLICY kube_events_walls ON kube_events;
ALTER TABLE kube_events DISABLE ROW LEVEL SECURITY;
ALTER TABLE kube_events NO FORCE ROW LEVEL SECURITY;
DROP POLICY pod_sessions_walls ON pod_sessions;
ALTER TABLE pod_sessions DISABLE ROW LEVEL SECURITY;
ALTER TABLE pod_sessions NO FORCE ROW LEVEL SECURITY;
DROP POLICY metric_snapshots_walls ON metric_snapshots;
ALTER TABLE metric_snapshots DISABLE ROW LEVEL SECURITY;
ALTER TABLE metric_snapshots NO FORCE ROW LEVEL SECURITY;
DROP POLICY registry_setups_walls ON registry_setups;
ALTER TABLE registry_setups DISABLE ROW LEVEL SECURITY;
ALTER TABLE registry_setups NO FORCE ROW LEVEL SECURITY;
DROP POLICY job_events_walls ON job_events;
ALTER TABLE job_events DISABLE ROW LEVEL SECURITY;
ALTER TABLE job_events NO FORCE ROW LEVEL SECURITY;
DROP POLICY job_steps_walls ON job_steps;
ALTER TABLE job_steps DISABLE ROW LEVEL SECURITY;
ALTER TABLE job_steps NO FORCE ROW LEVEL SECURITY;
DROP POLICY jobs_walls ON jobs;
ALTER TABLE jobs DISABLE ROW LEVEL SECURITY;
ALTER TABLE jobs NO FORCE ROW LEVEL SECURITY;
DROP POLICY projects_walls ON projects;
ALTER TABLE projects DISABLE ROW LEVEL SECURITY;
ALTER TABLE projects NO FORCE ROW LEVEL SECURITY;
DROP POLICY regions_delete ON regions;
DROP POLICY regions_update ON regions;
DROP POLICY regions_insert ON regions;
DROP POLICY regions_read ON regions;
ALTER TABLE regions DISABLE ROW LEVEL SECURITY;
ALTER TABLE regions NO FORCE ROW LEVEL SECURITY;
DROP POLICY api_tokens_walls ON api_tokens;
ALTER TABLE api_tokens DISABLE ROW LEVEL SECURITY;
ALTER TABLE api_tokens NO FORCE ROW LEVEL SECURITY;
DROP POLICY users_walls ON users;
ALTER TABLE users DISABLE ROW LEVEL SECURITY;
ALTER TABLE users NO FORCE ROW LEVEL SECURITY;
DROP TABLE region_assignments;
DROP FUNCTION runr_assignment_platform_only();
DROP TRIGGER jobs_tenant ON jobs;
DROP FUNCTION runr_job_tenant();
ALTER TABLE registry_setups DROP COLUMN tenant_id;
ALTER TABLE jobs DROP COLUMN tenant_id;
ALTER TABLE projects DROP COLUMN tenant_id;
ALTER TABLE regions DROP COLUMN region_mode;
ALTER TABLE regions DROP COLUMN tenant_id;
ALTER TABLE users DROP COLUMN tenant_id;
DROP TABLE tenants;
DROP FUNCTION runr_tenant();
