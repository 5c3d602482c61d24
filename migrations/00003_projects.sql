-- +goose Up
CREATE TABLE projects (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    slug            TEXT NOT NULL UNIQUE,
    region_id       TEXT REFERENCES regions (id) ON DELETE SET NULL,
    image           TEXT NOT NULL DEFAULT '',
    env_vars        JSONB NOT NULL DEFAULT '{}',
    secret_env_vars TEXT NOT NULL DEFAULT '',   -- secret (encrypted JSON object)
    cpu_m           INT NOT NULL DEFAULT 100,
    memory_mi       INT NOT NULL DEFAULT 128,
    always_on       BOOLEAN NOT NULL DEFAULT false,
    state           TEXT NOT NULL DEFAULT 'none' CHECK (state IN ('none', 'running', 'stopped')),
    deployed_image  TEXT NOT NULL DEFAULT '',
    deployed_at     TIMESTAMPTZ,
    message         TEXT NOT NULL DEFAULT '',
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX projects_region_idx ON projects (region_id);

CREATE TABLE metric_snapshots (
    id        BIGSERIAL PRIMARY KEY,
    region_id TEXT NOT NULL REFERENCES regions (id) ON DELETE CASCADE,
    taken_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    data      JSONB NOT NULL
);
CREATE INDEX metric_snapshots_region_idx ON metric_snapshots (region_id, taken_at DESC);

CREATE TABLE pod_sessions (
    id         BIGSERIAL PRIMARY KEY,
    region_id  TEXT NOT NULL REFERENCES regions (id) ON DELETE CASCADE,
    namespace  TEXT NOT NULL,
    pod        TEXT NOT NULL,
    event      TEXT NOT NULL,
    restarts   INT NOT NULL DEFAULT 0,
    at         TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX pod_sessions_region_idx ON pod_sessions (region_id, at DESC);

CREATE TABLE kube_events (
    id        BIGSERIAL PRIMARY KEY,
    region_id TEXT NOT NULL REFERENCES regions (id) ON DELETE CASCADE,
    at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    namespace TEXT NOT NULL DEFAULT '',
    object    TEXT NOT NULL DEFAULT '',
    type      TEXT NOT NULL DEFAULT '',
    reason    TEXT NOT NULL DEFAULT '',
    message   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX kube_events_region_idx ON kube_events (region_id, at DESC);

CREATE TABLE region_log_settings (
    region_id      TEXT PRIMARY KEY REFERENCES regions (id) ON DELETE CASCADE,
    retention_days INT NOT NULL DEFAULT 7
);

-- +goose Down
DROP TABLE region_log_settings;
DROP TABLE kube_events;
DROP TABLE pod_sessions;
DROP TABLE metric_snapshots;
DROP TABLE projects;
