-- +goose Up
-- Project kinds (issue 19): an HTTP function (a Knative Service, as before), a queue
-- worker (a Deployment consuming a Redis stream of the region's Redis) or a scheduled job
-- (a CronJob). demo marks the demo projects of their region (General → Demo Projects),
-- so that removing the demos removes exactly them.
ALTER TABLE projects ADD COLUMN kind TEXT NOT NULL DEFAULT 'http'
    CHECK (kind IN ('http', 'queue_worker', 'scheduled_job'));
ALTER TABLE projects ADD COLUMN schedule TEXT NOT NULL DEFAULT '';
ALTER TABLE projects ADD COLUMN queue_stream TEXT NOT NULL DEFAULT '';
ALTER TABLE projects ADD COLUMN command JSONB NOT NULL DEFAULT '[]';
ALTER TABLE projects ADD COLUMN demo BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX projects_demo_idx ON projects (region_id) WHERE demo;

-- +goose Down
DROP INDEX projects_demo_idx;
ALTER TABLE projects DROP COLUMN demo;
ALTER TABLE projects DROP COLUMN command;
ALTER TABLE projects DROP COLUMN queue_stream;
ALTER TABLE projects DROP COLUMN schedule;
ALTER TABLE projects DROP COLUMN kind;
