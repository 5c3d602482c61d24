package ops

import (
	"sort"
	"strings"
)

// Actor is who asks for a use case: a user's e-mail, a token's owner, or "cli".
type Actor struct {
	Email string
}

// Invalid refuses a request whose fields are wrong, with a message per field (a 422
// with field errors for JSON clients, the messages beside the fields in forms).
type Invalid struct {
	Fields map[string]string
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

// Refused turns down a request that the state of things does not allow, with the reason
// and, when it is about one, the field (a 422).
type Refused struct {
	Field  string
	Reason string
}

func (e *Refused) Error() string { return e.Reason }
