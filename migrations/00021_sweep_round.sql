-- +goose Up
-- The status sweep's round: the first console process of an interval records which
-- clusters were failing when the round began, and every process divides the fleet by that
-- one list (a process that read the regions after another had checked some would divide
-- them otherwise and check a region twice).
ALTER TABLE fleet_tasks ADD COLUMN data TEXT[] NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE fleet_tasks DROP COLUMN data;
