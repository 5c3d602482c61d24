-- +goose Up
-- A region's own Tempo retention in hours; 0 takes the console's
-- (RUNR_TRACING_RETENTION_HOURS). The first region of a cluster with tracing on decides
-- the cluster's backend.
ALTER TABLE regions ADD COLUMN tracing_retention_hours INTEGER NOT NULL DEFAULT 0
	CHECK (tracing_retention_hours BETWEEN 0 AND 8760);

-- +goose Down
ALTER TABLE regions DROP COLUMN tracing_retention_hours;
