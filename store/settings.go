package store

import (
	"context"
	"encoding/json"
)

// GetSetting reads a platform setting into v; a missing key leaves v unchanged.
func (s *Store) GetSetting(ctx context.Context, key string, v any) error {
	var raw []byte
	err := s.db(ctx).GetContext(ctx, &raw, `SELECT value FROM settings WHERE key = $1`, key)
	if err != nil {
		if err = wrap("setting "+key, err); isNotFound(err) {
			return nil
		}
		return err
	}
	return json.Unmarshal(raw, v)
}

// SetSetting stores a platform setting.
func (s *Store) SetSetting(ctx context.Context, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return wrap("set setting "+key, err)
	}
	_, err = s.db(ctx).ExecContext(ctx, `INSERT INTO settings (key, value) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`, key, raw)
	return wrap("set setting "+key, err)
}

// BaseDomain returns the platform's base domain ("" when none is set).
func (s *Store) BaseDomain(ctx context.Context) (string, error) {
	var d string
	err := s.GetSetting(ctx, "base_domain", &d)
	return d, err
}
