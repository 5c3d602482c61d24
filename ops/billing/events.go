package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/store/billingdb"
)

// envelope is the body of a delivered event.
type envelope struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// DeliverDue sends every pending event whose attempt is due to the webhook: delivered on
// a 2xx answer; otherwise tried again after Backoff, doubled each time, and dead after
// MaxAttempts attempts. Without a webhook URL nothing is sent.
func (s *Service) DeliverDue(ctx context.Context, now time.Time) error {
	set, err := s.settings(ctx)
	if err != nil || set.WebhookURL == "" {
		return err
	}
	evs, err := s.DB.ClaimDue(ctx, now, 2*s.Client.Timeout, 100)
	if err != nil {
		return err
	}
	var errs []error
	for i := range evs {
		errs = append(errs, s.deliver(ctx, set, &evs[i]))
	}
	return errors.Join(errs...)
}

// deliver makes one attempt at an event and records how it went.
func (s *Service) deliver(ctx context.Context, set *billingdb.Settings, ev *billingdb.Event) error {
	why := s.post(ctx, set, ev)
	now := s.Now()
	if why == nil {
		return s.DB.Delivered(ctx, ev.ID, now)
	}
	var next *time.Time
	if ev.Attempts+1 < s.MaxAttempts {
		t := now.Add(s.Backoff << ev.Attempts)
		next = &t
	}
	s.Log.Warn("billing: an event was not delivered", "event", ev.ID, "type", ev.Type, "attempt", ev.Attempts+1, "err", why, "dead", next == nil)
	return s.DB.Failed(ctx, ev.ID, why.Error(), next)
}

// post sends an event, signed, and says why it did not land (nil: a 2xx answer).
func (s *Service) post(ctx context.Context, set *billingdb.Settings, ev *billingdb.Event) error {
	body, err := json.Marshal(envelope{ID: ev.ID, Type: ev.Type, CreatedAt: ev.CreatedAt, Data: ev.Payload})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, set.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the webhook URL cannot be used: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Runr-Event-Id", ev.ID)
	req.Header.Set("Runr-Event-Type", ev.Type)
	req.Header.Set(SignatureHeader, Sign(set.WebhookSecret, s.Now(), body))
	resp, err := s.Client.Do(req)
	if err != nil {
		return fmt.Errorf("the webhook did not answer: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("the webhook answered %s", resp.Status)
	}
	return nil
}

// SendTestEvent sends a test event to the webhook at once and returns it as it ended
// (delivered, or pending with the reason, retried like any other).
func (s *Service) SendTestEvent(ctx context.Context, actor kit.Actor) (*billingdb.Event, error) {
	if err := platformOnly(actor); err != nil {
		return nil, err
	}
	set, err := s.settings(ctx)
	if err != nil {
		return nil, err
	}
	if set.WebhookURL == "" {
		return nil, &problem.Refused{Field: "webhook_url", Reason: "Set a webhook URL first: without one, events are only kept for GET /api/billing/events."}
	}
	ev, err := s.newEvent(set, nil, "test", map[string]string{"message": "A test event from the console's billing settings."})
	if err != nil {
		return nil, err
	}
	if err := s.DB.AddEvent(ctx, ev); err != nil {
		return nil, err
	}
	if err := s.deliver(ctx, set, ev); err != nil {
		return nil, err
	}
	evs, err := s.DB.Events(ctx, "", billingdb.Filter{Limit: 1, EventID: ev.ID})
	if err != nil || len(evs) == 0 {
		return nil, errors.Join(err, store.ErrNotFound)
	}
	return &evs[0], nil
}

// Events lists billing events, newest first ("" status: every status).
func (s *Service) Events(ctx context.Context, tenant, status string, q Query) ([]billingdb.Event, error) {
	f, err := filter(tenant, q)
	if err != nil {
		return nil, err
	}
	switch status {
	case "", billingdb.EventKept, billingdb.EventPending, billingdb.EventDelivered, billingdb.EventDead:
	default:
		return nil, &problem.Invalid{Fields: map[string]string{"status": "a status is kept, pending, delivered or dead"}}
	}
	return s.DB.Events(store.WithTenant(ctx, tenant), status, f)
}

// Redeliver puts a dead event back in the queue.
func (s *Service) Redeliver(ctx context.Context, actor kit.Actor, id string) error {
	if err := platformOnly(actor); err != nil {
		return err
	}
	err := s.DB.Redeliver(ctx, id, s.Now())
	if errors.Is(err, store.ErrNotFound) {
		return &problem.Refused{Reason: "Only a dead event can be sent again, and " + id + " is not one."}
	}
	return err
}
