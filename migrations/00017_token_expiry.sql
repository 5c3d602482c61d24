-- +goose Up
-- When an API token stops working (NULL: never). Tokens created before this migration keep
-- working until revoked, as they did.
ALTER TABLE api_tokens ADD COLUMN expires_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE api_tokens DROP COLUMN expires_at;
