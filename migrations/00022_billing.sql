-- +goose Up
-- The Billing module (RUNR_BILLING=on). Money is integer micros (millionths of the
-- console's currency unit) for prices and integer minor units (cents) for amounts;
-- quantities are integer usage-minutes. Nothing here is a float.

-- One row: the console's currency and where billing events go.
CREATE TABLE billing_settings (
    id                    BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
    currency              TEXT NOT NULL DEFAULT 'EUR',
    webhook_url           TEXT NOT NULL DEFAULT '',
    webhook_secret        TEXT NOT NULL DEFAULT '',
    updated_at            TIMESTAMPTZ NOT NULL DEFAULT now()
);
INSERT INTO billing_settings DEFAULT VALUES;

-- A region's billing type and prices (a region without a row is pay as you go at zero
-- prices). Removed with its region: closed bills and charges keep what they priced.
CREATE TABLE region_billing (
    region_id              TEXT PRIMARY KEY REFERENCES regions (id) ON DELETE CASCADE,
    type                   TEXT NOT NULL DEFAULT 'payg' CHECK (type IN ('payg', 'fixed')),
    vcpu_hour_micros       BIGINT NOT NULL DEFAULT 0 CHECK (vcpu_hour_micros >= 0),
    memory_gib_hour_micros BIGINT NOT NULL DEFAULT 0 CHECK (memory_gib_hour_micros >= 0),
    gpu_hour_micros        BIGINT NOT NULL DEFAULT 0 CHECK (gpu_hour_micros >= 0),
    fixed_period_micros    BIGINT NOT NULL DEFAULT 0 CHECK (fixed_period_micros >= 0),
    alloc_cpu_m            BIGINT NOT NULL DEFAULT 0 CHECK (alloc_cpu_m >= 0),
    alloc_memory_mi        BIGINT NOT NULL DEFAULT 0 CHECK (alloc_memory_mi >= 0),
    alloc_gpus             INT NOT NULL DEFAULT 0 CHECK (alloc_gpus >= 0),
    updated_at             TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One minute of one project's use, as its cluster's agent reported it. The key makes a
-- late or repeated report count once.
CREATE TABLE usage_minutes (
    project_id TEXT NOT NULL,
    minute     TIMESTAMPTZ NOT NULL,
    region_id  TEXT NOT NULL,
    tenant_id  TEXT,
    cpu_m      BIGINT NOT NULL,
    memory_mi  BIGINT NOT NULL,
    gpus       INT NOT NULL,
    PRIMARY KEY (project_id, minute)
);
CREATE INDEX usage_minutes_region_idx ON usage_minutes (region_id, minute);

-- What an account (a tenant, or the platform: tenant_id NULL) owes for one project (or,
-- project_id '', a fixed region's allocation) in one region and period: the summed
-- quantities and the prices they are priced at. Open until its period's bill closes;
-- the names stay when the region or project is removed.
CREATE TABLE charges (
    id                     TEXT PRIMARY KEY,
    tenant_id              TEXT,
    period_start           TIMESTAMPTZ NOT NULL,
    region_id              TEXT NOT NULL,
    region_name            TEXT NOT NULL,
    project_id             TEXT NOT NULL,
    project_name           TEXT NOT NULL,
    type                   TEXT NOT NULL CHECK (type IN ('payg', 'fixed')),
    cpu_minutes_m          BIGINT NOT NULL DEFAULT 0,
    memory_minutes_mi      BIGINT NOT NULL DEFAULT 0,
    gpu_minutes            BIGINT NOT NULL DEFAULT 0,
    vcpu_hour_micros       BIGINT NOT NULL DEFAULT 0,
    memory_gib_hour_micros BIGINT NOT NULL DEFAULT 0,
    gpu_hour_micros        BIGINT NOT NULL DEFAULT 0,
    fixed_period_micros    BIGINT NOT NULL DEFAULT 0,
    markup_bp              INT NOT NULL DEFAULT 0,
    bill_id                TEXT,
    created_at             TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at             TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX charges_key ON charges (period_start, COALESCE(tenant_id, ''), region_id, project_id);
CREATE INDEX charges_tenant_idx ON charges (tenant_id, period_start);

-- A closed bill: an account's charges of one period, priced and rounded. Never changed
-- after it is written (the trigger refuses).
CREATE TABLE bills (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT,
    period_start TIMESTAMPTZ NOT NULL,
    period_end   TIMESTAMPTZ NOT NULL,
    currency     TEXT NOT NULL,
    total_minor  BIGINT NOT NULL,
    -- base_total_minor is the total at the platform's prices, before the tenant's markup.
    base_total_minor BIGINT NOT NULL,
    lines        JSONB NOT NULL,
    closed_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX bills_key ON bills (period_start, COALESCE(tenant_id, ''));

-- +goose StatementBegin
CREATE FUNCTION runr_bills_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a closed bill is never changed';
END $$;
-- +goose StatementEnd
CREATE TRIGGER bills_immutable BEFORE UPDATE OR DELETE ON bills FOR EACH ROW EXECUTE FUNCTION runr_bills_immutable();

-- The signed billing events: kept (no webhook URL), pending, delivered or dead (retries
-- spent). The id is the receiver's idempotency key.
CREATE TABLE billing_events (
    id              TEXT PRIMARY KEY,
    seq             BIGSERIAL UNIQUE,
    tenant_id       TEXT,
    type            TEXT NOT NULL,
    payload         JSONB NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('kept', 'pending', 'delivered', 'dead')),
    attempts        INT NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ,
    last_error      TEXT NOT NULL DEFAULT '',
    delivered_at    TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX billing_events_due_idx ON billing_events (next_attempt_at) WHERE status = 'pending';

-- An offer of a platform region to a tenant (the Tenancy module's assignment while billing
-- is on): the region is assigned, with its quotas, once the tenant accepts with its markup.
CREATE TABLE region_offers (
    id          TEXT PRIMARY KEY,
    region_id   TEXT NOT NULL REFERENCES regions (id) ON DELETE CASCADE,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    cpu         DOUBLE PRECISION,
    memory_gib  DOUBLE PRECISION,
    status      TEXT NOT NULL DEFAULT 'offered' CHECK (status IN ('offered', 'accepted', 'declined')),
    markup_bp   INT NOT NULL DEFAULT 0 CHECK (markup_bp >= 0),
    offered_by  TEXT NOT NULL,
    decided_by  TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    decided_at  TIMESTAMPTZ
);
CREATE UNIQUE INDEX region_offers_open ON region_offers (region_id, tenant_id) WHERE status <> 'declined';

-- A tenant's users see their own account only.
ALTER TABLE charges ENABLE ROW LEVEL SECURITY;
ALTER TABLE charges FORCE ROW LEVEL SECURITY;
CREATE POLICY charges_walls ON charges USING (runr_tenant() IS NULL OR tenant_id = runr_tenant());
ALTER TABLE bills ENABLE ROW LEVEL SECURITY;
ALTER TABLE bills FORCE ROW LEVEL SECURITY;
CREATE POLICY bills_walls ON bills USING (runr_tenant() IS NULL OR tenant_id = runr_tenant());
ALTER TABLE billing_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE billing_events FORCE ROW LEVEL SECURITY;
CREATE POLICY billing_events_walls ON billing_events USING (runr_tenant() IS NULL OR tenant_id = runr_tenant());
ALTER TABLE usage_minutes ENABLE ROW LEVEL SECURITY;
ALTER TABLE usage_minutes FORCE ROW LEVEL SECURITY;
CREATE POLICY usage_minutes_walls ON usage_minutes USING (runr_tenant() IS NULL OR tenant_id = runr_tenant());
ALTER TABLE region_offers ENABLE ROW LEVEL SECURITY;
ALTER TABLE region_offers FORCE ROW LEVEL SECURITY;
CREATE POLICY region_offers_walls ON region_offers USING (runr_tenant() IS NULL OR tenant_id = runr_tenant());
ALTER TABLE billing_settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE billing_settings FORCE ROW LEVEL SECURITY;
-- Every account reads the currency; only the platform changes the settings.
CREATE POLICY billing_settings_read ON billing_settings FOR SELECT USING (true);
CREATE POLICY billing_settings_change ON billing_settings FOR UPDATE USING (runr_tenant() IS NULL);

-- +goose Down
DROP TABLE region_offers, billing_events, bills, charges, usage_minutes, region_billing, billing_settings;
DROP FUNCTION runr_bills_immutable();
