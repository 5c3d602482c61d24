package web

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/alexedwards/scs/v2"

	"runr.dev/console/changecache"
	"runr.dev/console/crypt"
	"runr.dev/console/store"
)

// Credentials (sessions, API tokens, users) are read on every request. The console keeps
// what it read until the database announces a change to the sessions, api_tokens or users
// tables (the runr_lists triggers of migration 00010, heard by the hub), and serves from
// it only while it hears them; a request of this console that may change something (any
// method but GET and HEAD) drops everything once it has run. A revoked token or a deleted
// session is therefore refused by this console from the end of the request that revoked
// it, and by the other consoles from the moment they hear the notification. Only found
// credentials are kept; every miss goes to the database.

// credCacheMax bounds the kept credentials (one entry per session, token or user).
const credCacheMax = 4096

// apiTokenUser is store.APITokenUser through the cache. A token whose last use was
// recorded more than store.TokenUseInterval ago goes to the database, which records this
// use (at one threshold, a lookup never finds the database's record too young to renew).
func (s *Server) apiTokenUser(ctx context.Context, plain string) (*store.APIToken, *store.User, error) {
	type tokenUser struct {
		t *store.APIToken
		u *store.User
	}
	key := "token:" + crypt.HashToken(plain)
	if v, ok := s.creds.GetValue(key); ok {
		if tu := v.(tokenUser); tu.t.LastUsedAt != nil && time.Since(*tu.t.LastUsedAt) <= store.TokenUseInterval && !tu.t.Expired(time.Now()) {
			t, u := *tu.t, *tu.u
			return &t, &u, nil
		}
	}
	gen := s.creds.Begin()
	t, u, err := s.Store.APITokenUser(ctx, plain)
	if err != nil {
		return nil, nil, err
	}
	ct, cu := *t, *u
	s.creds.Put(key, gen, tokenUser{&ct, &cu}, time.Time{})
	return t, u, nil
}

// userByID is store.UserByID through the cache.
func (s *Server) userByID(ctx context.Context, id string) (*store.User, error) {
	v, err := s.creds.LoadValue("user:"+id, func() (any, time.Time, error) {
		u, err := s.Store.UserByID(ctx, id)
		return u, time.Time{}, err
	})
	if err != nil {
		return nil, err
	}
	u := *v.(*store.User)
	return &u, nil
}

// cachedSessions is the sessions' store through the cache: Find keeps what it found until
// the session's deadline or a change; Commit and Delete drop every kept credential.
type cachedSessions struct {
	next  scs.Store
	cache *changecache.Cache
	codec scs.Codec
}

var errSessionNotFound = errors.New("session not found")

func (c *cachedSessions) Find(token string) ([]byte, bool, error) {
	v, err := c.cache.LoadValue("session:"+crypt.HashToken(token), func() (any, time.Time, error) {
		b, found, err := c.next.Find(token)
		if err != nil {
			return nil, time.Time{}, err
		}
		if !found {
			return nil, time.Time{}, errSessionNotFound
		}
		deadline, _, err := c.codec.Decode(b)
		if err != nil {
			return nil, time.Time{}, errSessionNotFound
		}
		return b, deadline, nil
	})
	if errors.Is(err, errSessionNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return v.([]byte), true, nil
}

func (c *cachedSessions) Commit(token string, b []byte, expiry time.Time) error {
	err := c.next.Commit(token, b, expiry)
	c.cache.Changed()
	return err
}

func (c *cachedSessions) Delete(token string) error {
	err := c.next.Delete(token)
	c.cache.Changed()
	return err
}

// All passes through (scs.IterableStore).
func (c *cachedSessions) All() (map[string][]byte, error) {
	if it, ok := c.next.(scs.IterableStore); ok {
		return it.All()
	}
	return nil, errors.New("sessions: the store cannot list sessions")
}

// decodedSessions is a session codec that remembers what it decoded: gob builds its
// decoder anew for every session it reads, which costs more than the rest of a cached
// request. The key is the encoded session itself, so an entry is exactly what decoding
// those bytes gives; each caller gets its own copy of the values (scs changes them).
type decodedSessions struct {
	next scs.Codec
	mu   sync.Mutex
	m    map[string]decodedSession
}

type decodedSession struct {
	deadline time.Time
	values   map[string]any
}

// decodedSessionsMax bounds the remembered sessions (they are dropped all at once).
const decodedSessionsMax = 4096

func (d *decodedSessions) Encode(deadline time.Time, values map[string]any) ([]byte, error) {
	return d.next.Encode(deadline, values)
}

func (d *decodedSessions) Decode(b []byte) (time.Time, map[string]any, error) {
	d.mu.Lock()
	e, ok := d.m[string(b)]
	d.mu.Unlock()
	if ok {
		return e.deadline, maps.Clone(e.values), nil
	}
	deadline, values, err := d.next.Decode(b)
	if err != nil {
		return deadline, values, err
	}
	for _, v := range values {
		switch v.(type) {
		case string, bool, int, int64, float64, time.Time:
		default:
			// A value a copy of the map would share: not remembered.
			return deadline, values, nil
		}
	}
	d.mu.Lock()
	if d.m == nil || len(d.m) >= decodedSessionsMax {
		d.m = map[string]decodedSession{}
	}
	d.m[string(b)] = decodedSession{deadline, maps.Clone(values)}
	d.mu.Unlock()
	return deadline, values, nil
}
