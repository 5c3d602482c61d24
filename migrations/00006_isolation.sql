-- +goose Up
-- The sandbox runtimes of a region (Kata Containers, gVisor, WebAssembly), the runtime
-- class of each workload kind, and the Sandbox API's settings of the region.
ALTER TABLE regions ADD COLUMN isolation JSONB NOT NULL DEFAULT '{}';
ALTER TABLE regions ADD COLUMN sandbox_settings JSONB NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE regions DROP COLUMN sandbox_settings;
ALTER TABLE regions DROP COLUMN isolation;
