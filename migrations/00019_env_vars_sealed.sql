-- +goose Up
-- A project's plain env vars are stored encrypted (enc:…) in env_vars_sealed; env_vars keeps
-- '{}' for them. Values still in env_vars (written before this migration, or by the
-- previous version while an upgrade rolls out) stay readable until `runr secrets encrypt`
-- (the chart's bootstrap Job runs it) moves them into env_vars_sealed.
ALTER TABLE projects ADD COLUMN env_vars_sealed TEXT NOT NULL DEFAULT '';

-- +goose Down
-- The encrypted values cannot be decrypted here: roll back only after a restore.
ALTER TABLE projects DROP COLUMN env_vars_sealed;
