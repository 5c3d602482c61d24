package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"runr.dev/console/store"
	"runr.dev/console/web/webtest"
)

// TestJobSocketBatchesABurst: a JSON subscriber gets every event of a burst, in order
// and once, in far fewer messages than events (one message per burst gap, not one write
// per event).
func TestJobSocketBatchesABurst(t *testing.T) {
	e := webtest.New(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.S.Hub.Run(ctx)
	<-e.S.Hub.Ready()
	_, tok := e.User("viewer")
	j := &store.Job{Kind: "apply-settings", Title: "burst"}
	if err := e.Store.CreateJob(ctx, j, []store.JobStep{{Name: "a", Title: "A"}}, ""); err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+tok)
	base := strings.Replace(e.Listen(), "http://", "ws://", 1)
	conn, _, err := websocket.DefaultDialer.Dial(base+"/ws/jobs/"+j.ID+"?format=json", h)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The subscription is registered before the upgrade answers its first message; an
	// event proves it (and, after a quiet spell, comes alone).
	add := func(n int) {
		if _, err := e.Store.AddEvent(ctx, &store.JobEvent{JobID: j.ID, Kind: "log", Message: fmt.Sprintf("line %d", n)}); err != nil {
			t.Fatal(err)
		}
	}
	add(0)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, first, err := conn.ReadMessage()
	if err != nil || bytes.Count(first, []byte("\n")) != 0 || !strings.Contains(string(first), `"line 0"`) {
		t.Fatalf("the first event: %v %s", err, first)
	}
	const burst = 300
	for n := 1; n <= burst; n++ {
		add(n)
	}
	var last int64
	got, messages := 0, 0
	for got < burst {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("after %d of %d events: %v", got, burst, err)
		}
		messages++
		for _, line := range bytes.Split(msg, []byte("\n")) {
			var ev store.JobEvent
			if err := json.Unmarshal(line, &ev); err != nil {
				t.Fatalf("%v: %s", err, line)
			}
			if ev.ID <= last {
				t.Fatalf("event %d after %d", ev.ID, last)
			}
			last = ev.ID
			if want := fmt.Sprintf("line %d", got+1); ev.Message != want {
				t.Fatalf("got %q, want %q", ev.Message, want)
			}
			got++
		}
	}
	if messages > burst/3 {
		t.Fatalf("%d events came in %d messages: a burst must be batched", burst, messages)
	}
	t.Logf("%d events in %d messages", burst, messages)
}
