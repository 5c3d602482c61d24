package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"runr.dev/console/engine"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// A composed job runs the steps of its parts in order, each with its part's parameters
// and under its part's title; a failure tells the failed part's kind only, and a retry
// goes on from the failed step.
func TestComposedJobRunsItsPartsInOrder(t *testing.T) {
	st := storetest.New(t)
	type params struct {
		Name string `json:"name"`
	}
	var mu sync.Mutex
	var ran []string
	failOnce := map[string]bool{"b": true}
	finished := make(chan string, 4)
	part := &engine.Kind{
		Name: "part",
		Plan: engine.PlanWith(func(p params) []engine.Step {
			return []engine.Step{
				{Name: "one", Title: "One", Run: func(ctx context.Context, jc *engine.JobContext) error {
					var seen params
					if err := jc.Params(&seen); err != nil {
						return err
					}
					mu.Lock()
					defer mu.Unlock()
					ran = append(ran, p.Name+"/"+seen.Name)
					if failOnce[seen.Name] {
						delete(failOnce, seen.Name)
						return errors.New("part " + seen.Name + " broke")
					}
					return nil
				}},
				{Name: "two", Title: "Two", Parallel: true, Run: func(ctx context.Context, jc *engine.JobContext) error { return nil }},
			}
		}),
		Finished: func(ctx context.Context, jc *engine.JobContext, err error) {
			var p params
			jc.Params(&p)
			finished <- p.Name + ": " + err.Error()
		},
	}
	type composedParams struct {
		Parts []engine.Part `json:"parts"`
	}
	var e *engine.Engine
	whole := &engine.Kind{
		Name: "whole",
		Plan: func(jc *engine.JobContext) ([]engine.Step, error) {
			var p composedParams
			if err := jc.Params(&p); err != nil {
				return nil, err
			}
			return e.PlanParts(jc, p.Parts)
		},
		Finished: func(ctx context.Context, jc *engine.JobContext, err error) {
			var p composedParams
			jc.Params(&p)
			e.FinishParts(ctx, jc, p.Parts, err)
		},
	}
	e = newEngine(t, st, "console-a", part, whole)
	var parts []engine.Part
	for _, name := range []string{"a", "b", "c"} {
		p, err := engine.PartOf("Part "+name, engine.Request{Kind: "part", Params: params{Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
	}
	start(t, e, 1)
	j := enqueue(t, e, "whole", composedParams{Parts: parts})
	waitJob(t, st, j.ID, store.JobFailed)
	if got := receive(t, finished, "the failed part's Finished"); got != "b: part b broke" {
		t.Fatalf("Finished heard %q", got)
	}
	steps := jobSteps(t, st, j.ID)
	var names, titles []string
	for _, s := range steps {
		names, titles = append(names, s.Name+"="+string(s.Status)), append(titles, s.Title)
	}
	if got := strings.Join(names, " "); got != "p0.one=done p0.two=done p1.one=failed p1.two=pending p2.one=pending p2.two=pending" {
		t.Fatalf("steps: %s", got)
	}
	if titles[2] != "Part b: One" {
		t.Fatalf("a part's step is titled %q", titles[2])
	}
	if err := st.RetryJob(context.Background(), j.ID); err != nil {
		t.Fatal(err)
	}
	e.Wake()
	waitJob(t, st, j.ID, store.JobSucceeded)
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(ran, " "); got != "a/a b/b b/b c/c" {
		t.Fatalf("the parts' steps ran as %s (plan's parameters / the step's)", got)
	}
	select {
	case got := <-finished:
		t.Fatalf("a succeeded part was told %q", got)
	default:
	}
	var back composedParams
	if err := json.Unmarshal(j.Params, &back); err != nil || len(back.Parts) != 3 {
		t.Fatalf("the job's parameters: %s (%v)", j.Params, err)
	}
}
