// Package changecache keeps answers the console built (rendered region lists, JSON pages,
// credentials it checked) until the database announces a change, so that a fleet's lists
// are built once per change rather than once per request.
package changecache

import (
	"cmp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Cache keeps rendered region lists (HTML content and JSON answers) until anything
// they show changes. The database announces every such change on store.ListsChannel
// (triggers of migration 00010); the hub hears it and calls Changed, which drops every
// entry. A console that cannot hear changes (its listener not connected yet, or lost)
// neither serves nor keeps entries. Changes made through this console's own requests
// drop the entries as soon as the request ends (ChangedLocally), without waiting for the
// notification.
//
// An entry is filled only if no change was heard between the start of the queries that
// built it and its storing (the generation), so a change that lands while a page is
// being built never leaves the older page behind.
//
// Keys name what was built and for whom (handlers' listCacheKey: the route, its
// parameters and the principal's permission class; a tenant's user's lists are never cached).
type Cache struct {
	// Max bounds the number of entries (0: maxListEntries).
	Max int

	gen       atomic.Uint64
	listening atomic.Bool

	mu      sync.Mutex
	entries map[string]listEntry
	bytes   int // of the []byte values kept
	// flights are the answers being built, by key and generation: the requests that miss
	// together wait for one build instead of each running the queries.
	flights map[string]*listFlight
}

type listFlight struct {
	done chan struct{}
	val  any
	err  error
}

type listEntry struct {
	gen   uint64
	val   any
	until time.Time // zero: until the next change
}

// maxListEntries bounds the cache (the query text is the user's); Max, when set, instead.
// maxListBytes bounds the bytes of the rendered answers it keeps (a JSON page of 1,000
// regions is about 2.3 MB).
const (
	maxListEntries = 512
	maxListBytes   = 64 << 20
)

// Changed drops every entry (the hub heard a change).
func (lc *Cache) Changed() {
	lc.gen.Add(1)
	lc.mu.Lock()
	clear(lc.entries)
	lc.bytes = 0
	lc.mu.Unlock()
}

// ChangedLocally drops every entry after a request of this console that may have changed
// something (any method but GET and HEAD).
func (lc *Cache) ChangedLocally() { lc.Changed() }

// Listening says whether changes can be heard; entries are dropped either way.
func (lc *Cache) Listening(on bool) {
	lc.listening.Store(on)
	lc.Changed()
}

// Begin returns the generation to pass to put, taken before the queries.
func (lc *Cache) Begin() uint64 { return lc.gen.Load() }

// Get returns a cached body.
func (lc *Cache) Get(key string) ([]byte, bool) {
	v, ok := lc.GetValue(key)
	b, _ := v.([]byte)
	return b, ok && b != nil
}

// GetValue returns a cached value.
func (lc *Cache) GetValue(key string) (any, bool) {
	if key == "" || !lc.listening.Load() {
		return nil, false
	}
	lc.mu.Lock()
	e, ok := lc.entries[key]
	lc.mu.Unlock()
	if !ok || e.gen != lc.gen.Load() || (!e.until.IsZero() && !time.Now().Before(e.until)) {
		return nil, false
	}
	return e.val, true
}

// Put stores a body built from queries that started at generation gen, unless a change
// was heard since.
func (lc *Cache) Put(key string, gen uint64, val any, until time.Time) {
	if key == "" || !lc.listening.Load() {
		return
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.gen.Load() != gen {
		return
	}
	if lc.entries == nil {
		lc.entries = map[string]listEntry{}
	}
	if old, ok := lc.entries[key]; ok {
		// An entry past its time: replaced.
		ob, _ := old.val.([]byte)
		lc.bytes -= len(ob)
		delete(lc.entries, key)
	}
	b, _ := val.([]byte)
	if len(lc.entries) >= cmp.Or(lc.Max, maxListEntries) || lc.bytes+len(b) > maxListBytes {
		return
	}
	lc.bytes += len(b)
	lc.entries[key] = listEntry{gen: gen, val: val, until: until}
}

// Load returns the cached body of key, or builds it (build returns the body and when it
// stops being valid, zero for never) and keeps it. Requests that miss on the same key at
// the same generation share one build.
func (lc *Cache) Load(key string, build func() ([]byte, time.Time, error)) ([]byte, error) {
	v, err := lc.LoadValue(key, func() (any, time.Time, error) { return build() })
	b, _ := v.([]byte)
	return b, err
}

// LoadValue is load for any value; a value shared by several requests must not be
// changed by any of them.
func (lc *Cache) LoadValue(key string, build func() (any, time.Time, error)) (any, error) {
	if v, ok := lc.GetValue(key); ok {
		return v, nil
	}
	if key == "" || !lc.listening.Load() {
		v, _, err := build()
		return v, err
	}
	gen := lc.Begin()
	fk := key + "\x00gen=" + strconv.FormatUint(gen, 10)
	lc.mu.Lock()
	if f, ok := lc.flights[fk]; ok {
		lc.mu.Unlock()
		<-f.done
		if f.err == nil {
			return f.val, nil
		}
		v, _, err := build()
		return v, err
	}
	if lc.flights == nil {
		lc.flights = map[string]*listFlight{}
	}
	f := &listFlight{done: make(chan struct{})}
	lc.flights[fk] = f
	lc.mu.Unlock()
	v, until, err := build()
	f.val, f.err = v, err
	lc.mu.Lock()
	delete(lc.flights, fk)
	lc.mu.Unlock()
	close(f.done)
	if err == nil {
		lc.Put(key, gen, v, until)
	}
	return v, err
}
