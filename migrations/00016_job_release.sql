-- +goose Up
-- The release a job must run with ('' = any): a reconcile brings the regions to what the
-- release that queued it installs, so a console of another release (an old pod still
-- draining during an upgrade) must not take it.
ALTER TABLE jobs ADD COLUMN release TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE jobs DROP COLUMN release;
