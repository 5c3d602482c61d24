-- +goose Up
-- The data services of a region (KV on its Redis, the object store, PostgreSQL) and its
-- Skupper site, and the bindings that give a project its own part of one of them.
ALTER TABLE regions ADD COLUMN data_services JSONB NOT NULL DEFAULT '{}';
ALTER TABLE regions ADD COLUMN skupper JSONB NOT NULL DEFAULT '{}';

CREATE TABLE bindings (
    id          TEXT PRIMARY KEY,
    project_id  TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    -- The region whose service it binds; cleared with the region (its bindings stay).
    region_id   TEXT REFERENCES regions (id) ON DELETE SET NULL,
    service     TEXT NOT NULL CHECK (service IN ('kv', 'object', 'postgres')),
    status      TEXT NOT NULL DEFAULT 'installing',
    message     TEXT NOT NULL DEFAULT '',
    -- The binding's own part of the service: its Redis user and key prefix, bucket, or
    -- database and role.
    resource    TEXT NOT NULL DEFAULT '',
    credentials TEXT NOT NULL DEFAULT '',   -- secret (encrypted JSON object)
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (project_id, service)
);
CREATE INDEX bindings_region_idx ON bindings (region_id, service);

-- Tenancy's walls (00009): a binding is its project's; in a tenant's walls only the
-- bindings of the tenant's projects exist.
ALTER TABLE bindings ENABLE ROW LEVEL SECURITY;
ALTER TABLE bindings FORCE ROW LEVEL SECURITY;
CREATE POLICY bindings_walls ON bindings USING (runr_tenant() IS NULL OR EXISTS (SELECT 1 FROM projects p WHERE p.id = project_id));

-- +goose Down
DROP TABLE bindings;
ALTER TABLE regions DROP COLUMN skupper;
ALTER TABLE regions DROP COLUMN data_services;
