-- +goose Up
-- The supply chain of a region (cosign public keys, what the deploy gate requires, the
-- admission policy and its state in the cluster), the data location a project requires
-- (data residency), and the deploy gate's verdicts.
ALTER TABLE regions ADD COLUMN supply_chain JSONB NOT NULL DEFAULT '{}';
ALTER TABLE projects ADD COLUMN data_location TEXT NOT NULL DEFAULT '';

CREATE TABLE supply_chain_verdicts (
    id         BIGSERIAL PRIMARY KEY,
    region_id  TEXT NOT NULL REFERENCES regions (id) ON DELETE CASCADE,
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    image      TEXT NOT NULL,
    digest     TEXT NOT NULL DEFAULT '',
    verdict    TEXT NOT NULL CHECK (verdict IN ('accepted', 'refused')),
    reason     TEXT NOT NULL DEFAULT '',
    detail     JSONB NOT NULL DEFAULT '{}',
    at         TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX supply_chain_verdicts_region_idx ON supply_chain_verdicts (region_id, at DESC);
CREATE INDEX supply_chain_verdicts_project_idx ON supply_chain_verdicts (project_id, at DESC);

-- +goose Down
DROP TABLE supply_chain_verdicts;
ALTER TABLE projects DROP COLUMN data_location;
ALTER TABLE regions DROP COLUMN supply_chain;
