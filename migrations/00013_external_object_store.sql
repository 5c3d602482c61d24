-- +goose Up
-- An external S3 endpoint as a region's object store (issue 19): its settings live in
-- data_services.object; the administrator's secret key, which creates each binding's
-- bucket and IAM user, is a secret at rest (encrypted like the other region secrets).
ALTER TABLE regions ADD COLUMN object_secret_key TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE regions DROP COLUMN object_secret_key;
