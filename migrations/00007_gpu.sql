-- +goose Up
-- GPU support of a region (the NVIDIA chart installed, its state, the GPUs found, the
-- model storage volume) and the GPUs a project asks for.
ALTER TABLE regions ADD COLUMN gpu JSONB NOT NULL DEFAULT '{}';
ALTER TABLE projects ADD COLUMN gpu JSONB NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE projects DROP COLUMN gpu;
ALTER TABLE regions DROP COLUMN gpu;
