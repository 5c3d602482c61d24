package handlers

import (
	"sync"
	"time"
)

// shortCache keeps a value for a moment: what every page shows (the migration banners)
// is read once a second per console, not once per request. The banners are pushed over
// the WebSocket as they change anyway.
type shortCache[T any] struct {
	mu  sync.Mutex
	ttl time.Duration
	v   T
	at  time.Time
	ok  bool
}

// get returns the cached value, or loads it when it is older than the ttl.
func (c *shortCache[T]) get(load func() (T, error)) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok && time.Since(c.at) < c.ttl {
		return c.v, nil
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	c.v, c.at, c.ok = v, time.Now(), true
	return v, nil
}
