-- +goose Up
-- A token's last use, recorded at most once a minute per token (store.TokenUseInterval),
-- changes nothing a console keeps; announcing it made every console drop its kept lists
-- and credentials once a minute for each token in use. Only other changes to api_tokens
-- (a new token, a revoked one, new scopes) are announced on runr_lists.
DROP TRIGGER api_tokens_notify_lists ON api_tokens;
CREATE TRIGGER api_tokens_notify_lists AFTER INSERT OR DELETE ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION runr_notify_lists();
CREATE TRIGGER api_tokens_update_notify_lists AFTER UPDATE ON api_tokens
    FOR EACH ROW WHEN ((to_jsonb(OLD) - 'last_used_at') IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at'))
    EXECUTE FUNCTION runr_notify_lists();

-- +goose Down
DROP TRIGGER api_tokens_update_notify_lists ON api_tokens;
DROP TRIGGER api_tokens_notify_lists ON api_tokens;
CREATE TRIGGER api_tokens_notify_lists AFTER INSERT OR UPDATE OR DELETE ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION runr_notify_lists();
