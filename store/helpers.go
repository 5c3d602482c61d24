package store

import (
	"database/sql"
	"errors"
	"fmt"
)

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// deref is *p, or "" for a nil p (a NULL column).
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// affected wraps an Exec result: an error, or ErrNotFound when no row changed.
func affected(op string, res sql.Result, err error) error {
	if err != nil {
		return wrap(op, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: %s: %w", op, ErrNotFound)
	}
	return nil
}
