package status

import (
	"sync"
	"time"
)

// breaker remembers unreachable clusters so that their checks back off and never
// delay the others.
type breaker struct {
	mu    sync.Mutex
	state map[string]breakerState
}

type breakerState struct {
	failures int
	until    time.Time
}

func newBreaker() *breaker { return &breaker{state: map[string]breakerState{}} }

// allow reports whether key may be tried now.
func (b *breaker) allow(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return time.Now().After(b.state[key].until)
}

// fail records a failure and backs off exponentially (up to 15 minutes).
func (b *breaker) fail(key string) (int, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.state[key]
	st.failures++
	backoff := time.Duration(1<<min(st.failures-1, 5)) * 30 * time.Second
	if backoff > 15*time.Minute {
		backoff = 15 * time.Minute
	}
	st.until = time.Now().Add(backoff)
	b.state[key] = st
	return st.failures, st.until
}

// ok forgets the failures of key.
func (b *breaker) ok(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.state, key)
}
