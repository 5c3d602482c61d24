package changecache

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestListCache(t *testing.T) {
	build := func(n *atomic.Int32, body string) func() ([]byte, time.Time, error) {
		return func() ([]byte, time.Time, error) { n.Add(1); return []byte(body), time.Time{}, nil }
	}
	t.Run("not listening: never kept", func(t *testing.T) {
		var lc Cache
		var n atomic.Int32
		for range 3 {
			if b, err := lc.Load("k", build(&n, "a")); err != nil || string(b) != "a" {
				t.Fatalf("load = %q, %v", b, err)
			}
		}
		if n.Load() != 3 {
			t.Fatalf("built %d times, want 3 (no listener, no cache)", n.Load())
		}
	})
	t.Run("kept until a change", func(t *testing.T) {
		var lc Cache
		lc.Listening(true)
		var n atomic.Int32
		lc.Load("k", build(&n, "a"))
		if b, _ := lc.Load("k", build(&n, "b")); string(b) != "a" || n.Load() != 1 {
			t.Fatalf("second load = %q after %d builds, want the kept a", b, n.Load())
		}
		lc.Changed()
		if b, _ := lc.Load("k", build(&n, "b")); string(b) != "b" {
			t.Fatalf("load after a change = %q, want b", b)
		}
		lc.ChangedLocally()
		if b, _ := lc.Load("k", build(&n, "c")); string(b) != "c" {
			t.Fatalf("load after a local change = %q, want c", b)
		}
		lc.Listening(false)
		if _, ok := lc.Get("k"); ok {
			t.Fatal("an entry served while not listening")
		}
	})
	t.Run("a change during the build is not kept", func(t *testing.T) {
		var lc Cache
		lc.Listening(true)
		lc.Load("k", func() ([]byte, time.Time, error) { lc.Changed(); return []byte("old"), time.Time{}, nil })
		if _, ok := lc.Get("k"); ok {
			t.Fatal("a page built across a change was kept")
		}
	})
	t.Run("expiry", func(t *testing.T) {
		var lc Cache
		lc.Listening(true)
		lc.Load("k", func() ([]byte, time.Time, error) { return []byte("a"), time.Now().Add(-time.Second), nil })
		if _, ok := lc.Get("k"); ok {
			t.Fatal("an expired entry was served")
		}
	})
	t.Run("errors are not kept", func(t *testing.T) {
		var lc Cache
		lc.Listening(true)
		if _, err := lc.Load("k", func() ([]byte, time.Time, error) { return nil, time.Time{}, errors.New("boom") }); err == nil {
			t.Fatal("no error")
		}
		if _, ok := lc.Get("k"); ok {
			t.Fatal("an error was kept")
		}
	})
	t.Run("requests that miss together share one build", func(t *testing.T) {
		var lc Cache
		lc.Listening(true)
		var n atomic.Int32
		release := make(chan struct{})
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				b, err := lc.Load("k", func() ([]byte, time.Time, error) { n.Add(1); <-release; return []byte("a"), time.Time{}, nil })
				if err != nil || string(b) != "a" {
					t.Errorf("load = %q, %v", b, err)
				}
			})
		}
		time.Sleep(50 * time.Millisecond)
		close(release)
		wg.Wait()
		if n.Load() != 1 {
			t.Fatalf("built %d times, want 1", n.Load())
		}
	})
}

func TestListCacheExpiredEntryIsReplaced(t *testing.T) {
	var lc Cache
	lc.Listening(true)
	lc.Load("k", func() ([]byte, time.Time, error) { return []byte("old"), time.Now().Add(-time.Second), nil })
	b, _ := lc.Load("k", func() ([]byte, time.Time, error) { return []byte("new"), time.Time{}, nil })
	if got, ok := lc.Get("k"); !ok || string(got) != "new" || string(b) != "new" {
		t.Fatalf("after expiry: kept %q (%v), loaded %q; want new", got, ok, b)
	}
}
