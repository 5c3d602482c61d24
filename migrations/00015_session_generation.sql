-- +goose Up
-- A user's sessions carry the generation they were signed in with; a password change or
-- "sign out other sessions" moves it on, and every session of an older generation is
-- signed out at its next request (web/session.go). The users table's runr_lists trigger
-- (migration 00010) tells every console's credential cache of the change.
ALTER TABLE users ADD COLUMN session_generation INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE users DROP COLUMN session_generation;
