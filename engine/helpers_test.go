package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"runr.dev/console/crypt"
	"runr.dev/console/engine"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// testWriter sends log lines to the test's log until the test ends.
type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func newLogger(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, nil))
}

// openStore opens another connection pool on the test's database, as another console
// process would.
func openStore(t testing.TB, url string) *store.Store {
	t.Helper()
	cipher, err := crypt.NewCipher(storetest.AppKey)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), url, cipher)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newEngine builds an engine on st with the test's kinds.
func newEngine(t testing.TB, st *store.Store, owner string, kinds ...*engine.Kind) *engine.Engine {
	e := engine.New(st, newLogger(t).With("owner", owner), owner, 5*time.Second)
	for _, k := range kinds {
		e.Register(k)
	}
	return e
}

// start runs e with n runners until the returned stop is called (or the test ends);
// stop waits for Run to return.
func start(t testing.TB, e *engine.Engine, n int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run(ctx, n)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				t.Errorf("engine %s did not stop", e.Owner())
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// eventually polls cond every 20 ms until it holds, failing the test after timeout.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitJob waits until the job has ended and returns it; it fails when the job ends
// with another status than want.
func waitJob(t testing.TB, st *store.Store, id string, want store.JobStatus) *store.Job {
	t.Helper()
	return waitJobWithin(t, st, id, want, 15*time.Second)
}

// waitJobWithin is waitJob with its own deadline.
func waitJobWithin(t testing.TB, st *store.Store, id string, want store.JobStatus, timeout time.Duration) *store.Job {
	t.Helper()
	var j *store.Job
	eventually(t, timeout, "job "+id+" to be "+string(want), func() bool {
		var err error
		j, err = st.JobByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return j.Done()
	})
	if j.Status != want {
		t.Fatalf("job ended %s (error %q), want %s", j.Status, j.Error, want)
	}
	return j
}

func jobSteps(t testing.TB, st *store.Store, id string) []store.JobStep {
	t.Helper()
	steps, err := st.JobSteps(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return steps
}

func jobEvents(t testing.TB, st *store.Store, id string) []store.JobEvent {
	t.Helper()
	es, err := st.JobEvents(context.Background(), id, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// stepStates is "name=status" for every step, in order.
func stepStates(steps []store.JobStep) string {
	var b []string
	for _, s := range steps {
		b = append(b, s.Name+"="+string(s.Status))
	}
	return strings.Join(b, " ")
}

// hasLog reports whether the job has a log event with this level whose message contains text.
func hasLog(es []store.JobEvent, level, text string) bool {
	for _, e := range es {
		if e.Kind == "log" && e.Level == level && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

// counts counts runs by key, safely across runners.
type counts struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counts) inc(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[k]++
	return c.m[k]
}

func (c *counts) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

// fixed is a kind whose plan is always these steps.
func fixed(name string, steps ...engine.Step) *engine.Kind {
	return &engine.Kind{Name: name, Plan: func(*engine.JobContext) ([]engine.Step, error) { return steps, nil }}
}

// counted is a step that counts its runs per job under c and then runs fn (nil: nothing).
func counted(c *counts, name string, fn func(ctx context.Context, jc *engine.JobContext) error) engine.Step {
	return engine.Step{Name: name, Title: "Step " + name, Run: func(ctx context.Context, jc *engine.JobContext) error {
		c.inc(jc.Job.ID + "/" + name)
		if fn != nil {
			return fn(ctx, jc)
		}
		return nil
	}}
}

// blockUntilDone signals started (once per call) and waits for the step's context to end.
func blockUntilDone(started chan<- string) func(ctx context.Context, jc *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		select {
		case started <- jc.Job.ID:
		default:
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(30 * time.Second):
			return errors.New("the step's context never ended")
		}
	}
}

func enqueue(t testing.TB, e *engine.Engine, kind string, params any) *store.Job {
	t.Helper()
	j, err := e.Enqueue(context.Background(), engine.Request{Kind: kind, Title: "test " + kind, Params: params, CreatedBy: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func receive[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(15 * time.Second):
		t.Fatalf("gave up waiting for %s", what)
	}
	var zero T
	return zero
}
