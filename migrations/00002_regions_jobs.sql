-- +goose Up
CREATE TABLE regions (
    id                      TEXT PRIMARY KEY,
    name                    TEXT NOT NULL UNIQUE,
    kubeconfig              TEXT NOT NULL,            -- secret (encrypted)
    cluster_server          TEXT NOT NULL DEFAULT '',
    cluster_key             TEXT NOT NULL DEFAULT '',
    k8s_version             TEXT NOT NULL DEFAULT '',
    region_status           TEXT NOT NULL DEFAULT 'active' CHECK (region_status IN ('active', 'inactive', 'maintenance')),
    nodes                   TEXT[] NOT NULL DEFAULT '{}',
    data_location           TEXT NOT NULL DEFAULT '',
    settings                JSONB NOT NULL DEFAULT '{}',
    monitoring              JSONB NOT NULL DEFAULT '{}',

    registry_mode           TEXT NOT NULL DEFAULT 'none',
    registry_status         TEXT NOT NULL DEFAULT 'not_installed',
    registry_status_message TEXT NOT NULL DEFAULT '',
    registry_config         JSONB NOT NULL DEFAULT '{}',
    registry_secret         TEXT NOT NULL DEFAULT '',  -- secret (encrypted)
    registry_address        TEXT NOT NULL DEFAULT '',

    operator_status         TEXT NOT NULL DEFAULT 'not_installed',
    operator_namespace      TEXT NOT NULL DEFAULT 'knative-operator',
    operator_version        TEXT NOT NULL DEFAULT '',
    operator_adopted        BOOLEAN NOT NULL DEFAULT false,
    serving_status          TEXT NOT NULL DEFAULT 'not_installed',
    serving_namespace       TEXT NOT NULL DEFAULT 'knative-serving',
    knative_version         TEXT NOT NULL DEFAULT '',
    serving_adopted         BOOLEAN NOT NULL DEFAULT false,
    knative_message         TEXT NOT NULL DEFAULT '',

    redis_mode              TEXT NOT NULL DEFAULT 'managed',
    redis_status            TEXT NOT NULL DEFAULT 'not_installed',
    redis_address           TEXT NOT NULL DEFAULT '',
    redis_password          TEXT NOT NULL DEFAULT '',  -- secret (encrypted)
    redis_message           TEXT NOT NULL DEFAULT '',

    components              JSONB NOT NULL DEFAULT '{}',
    external_ip             TEXT NOT NULL DEFAULT '',
    dns_resolved            BOOLEAN NOT NULL DEFAULT false,
    health                  JSONB NOT NULL DEFAULT '{}',
    checked_at              TIMESTAMPTZ,

    agent_token             TEXT NOT NULL DEFAULT '',  -- secret (encrypted)
    agent_token_hash        TEXT NOT NULL DEFAULT '',
    agent_last_seen_at      TIMESTAMPTZ,

    function_tls_cert       TEXT NOT NULL DEFAULT '',
    function_tls_key        TEXT NOT NULL DEFAULT '',  -- secret (encrypted)
    function_tls_expires_at TIMESTAMPTZ,

    faas_cpu_overcommit     DOUBLE PRECISION NOT NULL DEFAULT 3,
    faas_memory_overcommit  DOUBLE PRECISION NOT NULL DEFAULT 1.5,

    migration_status        TEXT NOT NULL DEFAULT '',
    migration_detail        JSONB NOT NULL DEFAULT '{}',
    migration_dns_check_at  TIMESTAMPTZ,
    old_kubeconfig          TEXT NOT NULL DEFAULT '',  -- secret (encrypted)
    old_external_ip         TEXT NOT NULL DEFAULT '',
    domain_migration_status TEXT NOT NULL DEFAULT '',
    domain_migration_target TEXT NOT NULL DEFAULT '',

    created_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at              TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX regions_cluster_key_idx ON regions (cluster_key);
CREATE INDEX regions_agent_token_hash_idx ON regions (agent_token_hash);

CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,
    kind             TEXT NOT NULL,
    title            TEXT NOT NULL,
    region_id        TEXT REFERENCES regions (id) ON DELETE SET NULL,
    params           JSONB NOT NULL DEFAULT '{}',
    secret_params    TEXT NOT NULL DEFAULT '',          -- secret (encrypted)
    status           TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    error            TEXT NOT NULL DEFAULT '',
    attempts         INT NOT NULL DEFAULT 0,
    lease_owner      TEXT NOT NULL DEFAULT '',
    lease_until      TIMESTAMPTZ,
    cancel_requested BOOLEAN NOT NULL DEFAULT false,
    created_by       TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    started_at       TIMESTAMPTZ,
    finished_at      TIMESTAMPTZ
);
CREATE INDEX jobs_claim_idx ON jobs (created_at) WHERE status IN ('queued', 'running');
CREATE INDEX jobs_region_idx ON jobs (region_id, created_at DESC);

CREATE TABLE job_steps (
    job_id      TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    idx         INT NOT NULL,
    name        TEXT NOT NULL,
    title       TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done', 'failed', 'skipped')),
    message     TEXT NOT NULL DEFAULT '',
    wait        TEXT NOT NULL DEFAULT '',
    started_at  TIMESTAMPTZ,
    finished_at TIMESTAMPTZ,
    PRIMARY KEY (job_id, idx)
);

CREATE TABLE job_events (
    id         BIGSERIAL PRIMARY KEY,
    job_id     TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    kind       TEXT NOT NULL,
    step_idx   INT NOT NULL DEFAULT -1,
    level      TEXT NOT NULL DEFAULT 'info',
    message    TEXT NOT NULL DEFAULT '',
    data       JSONB NOT NULL DEFAULT '{}'
);
CREATE INDEX job_events_job_idx ON job_events (job_id, id);

CREATE TABLE registry_setups (
    token      TEXT PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    region_id  TEXT REFERENCES regions (id) ON DELETE SET NULL,
    job_id     TEXT REFERENCES jobs (id) ON DELETE SET NULL,
    created_by TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE registry_setups;
DROP TABLE job_events;
DROP TABLE job_steps;
DROP TABLE jobs;
DROP TABLE regions;
