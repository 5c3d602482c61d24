-- +goose Up
-- A region's tracing mode: '' follows the console's default (RUNR_TRACING_DEFAULT_MODE),
-- 'on' or 'off' is the region's own choice ('off' after its backend was removed, so that
-- reconcile does not install it again).
ALTER TABLE regions ADD COLUMN tracing_mode TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE regions DROP COLUMN tracing_mode;
