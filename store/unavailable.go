package store

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/lib/pq"
)

// ErrUnavailable marks an operation that failed because the database could not be
// reached or went away, not because of what a statement found: the caller answers 503
// and tries again later, and never reads it as "no such row".
var ErrUnavailable = errors.New("the database is unavailable")

// Unavailable reports whether an error of a database call says the database could not be
// reached: the connection refused, reset or broken (driver.ErrBadConn, an end of stream),
// or the server refusing connections or shutting down (SQLSTATE classes 08 and 57P). It
// is the one place that classifies them; wrap marks such errors with ErrUnavailable.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		code := string(pqErr.Code)
		return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "57P")
	}
	var opErr *net.OpError
	return errors.Is(err, ErrUnavailable) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.As(err, &opErr) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
