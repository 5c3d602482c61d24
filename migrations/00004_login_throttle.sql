-- +goose Up
-- The time of the last failure: the progressive delay of an account counts from it.
ALTER TABLE login_failures ADD COLUMN last_failure_at TIMESTAMPTZ NOT NULL DEFAULT now();

-- +goose Down
ALTER TABLE login_failures DROP COLUMN last_failure_at;
