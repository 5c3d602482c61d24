package store

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"

	gojson "github.com/goccy/go-json"
)

// JSON stores a Go value in a JSONB column.
type JSON[T any] struct{ V T }

// Scan implements sql.Scanner.
func (j *JSON[T]) Scan(src any) error {
	var raw []byte
	switch v := src.(type) {
	case nil:
		var zero T
		j.V = zero
		return nil
	case []byte:
		raw = v
	case string:
		raw = []byte(v)
	default:
		return fmt.Errorf("store: cannot scan %T into JSON", src)
	}
	// go-json decodes the same documents as encoding/json, several times faster: the
	// region lists scan half a dozen JSONB columns per row.
	return gojson.Unmarshal(raw, &j.V)
}

// Value implements driver.Valuer.
func (j JSON[T]) Value() (driver.Value, error) {
	raw, err := json.Marshal(j.V)
	if err != nil {
		return nil, err
	}
	return string(raw), nil
}

// MarshalJSON writes the wrapped value.
func (j JSON[T]) MarshalJSON() ([]byte, error) { return json.Marshal(j.V) }

// UnmarshalJSON reads the wrapped value, so that clients decode what MarshalJSON wrote.
func (j *JSON[T]) UnmarshalJSON(raw []byte) error { return json.Unmarshal(raw, &j.V) }
