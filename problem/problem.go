// Package problem holds the ways a use case turns a request down: fields that are wrong,
// a state that does not allow it, something missing, a cluster that did not answer, a
// right the actor lacks, a conflict with the console's state. Handlers translate each to
// one HTTP status and one HTML rendering, in one place (handlers.Fail).
package problem

import (
	"sort"
	"strings"
)

// Invalid refuses a request whose fields are wrong, with a message per field (a 422
// with field errors for JSON clients, the messages beside the fields in forms).
type Invalid struct {
	Fields map[string]string
	// Summary is the sentence above the fields ("" for the usual one); Details are more
	// facts for JSON clients, such as what is still free.
	Summary string
	Details map[string]any
}

func (e *Invalid) Error() string {
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + e.Fields[k]
	}
	return "invalid: " + strings.Join(parts, "; ")
}

// FromFields is nil without field errors, and an *Invalid with them.
func FromFields(fields map[string]string) error {
	if len(fields) == 0 {
		return nil
	}
	return &Invalid{Fields: fields}
}

// Refused turns down a request that the state of things does not allow, with the reason
// and, when it is about one, the field (a 422). Err is the cause behind the reason when
// there is one (a chart repository that could not be read): users see it in short, the
// log keeps it.
type Refused struct {
	Field  string
	Reason string
	Err    error
}

func (e *Refused) Error() string {
	if e.Err != nil {
		return e.Reason + ": " + e.Err.Error()
	}
	return e.Reason
}

// Unwrap returns the cause behind the refusal.
func (e *Refused) Unwrap() error { return e.Err }

// Unreachable is the cluster of a region that did not answer a read a use case needed
// (a 502 for JSON clients).
type Unreachable struct {
	Region string
	Err    error
}

func (e *Unreachable) Error() string {
	return "the cluster of region " + e.Region + " did not answer: " + e.Err.Error()
}

// Unwrap returns the cluster's error.
func (e *Unreachable) Unwrap() error { return e.Err }

// Missing is something a use case was asked to act on that does not exist, such as a
// node the cluster does not have (a 404), with the sentence that says so.
type Missing struct {
	Reason string
}

func (e *Missing) Error() string { return e.Reason }

// Forbidden refuses a request its actor may not make on that object (a 403), with the
// sentence that says why.
type Forbidden struct {
	Reason string
}

func (e *Forbidden) Error() string { return e.Reason }

// Conflict refuses a request that the console's own state does not allow now (a 409),
// with the sentence that says why and what to do.
type Conflict struct {
	Reason string
	Err    error
}

func (e *Conflict) Error() string {
	if e.Err != nil {
		return e.Reason + ": " + e.Err.Error()
	}
	return e.Reason
}

// Unwrap returns the cause behind the conflict.
func (e *Conflict) Unwrap() error { return e.Err }
