-- +goose Up
-- Fleet tasks (the status sweep's shards, the periodic completions): whichever console
-- process claims a task first in an interval runs it, so that any number of processes
-- do each once per interval.
CREATE TABLE fleet_tasks (
    name       TEXT PRIMARY KEY,
    owner      TEXT NOT NULL DEFAULT '',
    started_at TIMESTAMPTZ NOT NULL DEFAULT 'epoch'
);

-- +goose Down
DROP TABLE fleet_tasks;
