package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"runr.dev/console/store"
)

// Part is one job of a composed job: the kind and parameters its own request would
// queue, kept in the composed job's parameters so that a resumed job plans the same
// steps.
type Part struct {
	Kind   string          `json:"kind"`
	Title  string          `json:"title"`
	Params json.RawMessage `json:"params,omitempty"`
}

// PartOf is the part that req would queue as a job of its own, titled title.
func PartOf(title string, req Request) (Part, error) {
	raw, err := json.Marshal(req.Params)
	if err != nil {
		return Part{}, fmt.Errorf("engine: part %s: %w", req.Kind, err)
	}
	return Part{Kind: req.Kind, Title: title, Params: raw}, nil
}

// partPrefix names a part's steps: "p<index>.".
func partPrefix(i int) string { return "p" + strconv.Itoa(i) + "." }

// PlanParts plans the steps of parts as one list, part after part, as each part's own
// job would run them: a step keeps its title after its part's ("Redis: Remove Redis"),
// its name takes the part's index as a prefix, and it reads the part's parameters. The
// parallel steps of one part never run beside those of the next.
func (e *Engine) PlanParts(jc *JobContext, parts []Part) ([]Step, error) {
	var steps []Step
	for i, part := range parts {
		k, ok := e.kinds[part.Kind]
		if !ok {
			return nil, fmt.Errorf("engine: part %d: unknown job kind %q", i, part.Kind)
		}
		sub := *jc
		sub.params = part.Params
		planned, err := plan(&sub, k)
		if err != nil {
			return nil, fmt.Errorf("engine: plan part %s: %w", part.Title, err)
		}
		if n := len(steps); n > 0 && len(planned) > 0 && steps[n-1].Parallel && planned[0].Parallel {
			steps[n-1].Parallel = false // ends the previous part's group
		}
		for _, st := range planned {
			run, params := st.Run, part.Params
			steps = append(steps, Step{Name: partPrefix(i) + st.Name, Title: part.Title + ": " + st.Title, Parallel: st.Parallel,
				Run: func(ctx context.Context, jc *JobContext) error {
					jc.params = params
					defer func() { jc.params = nil }()
					return run(ctx, jc)
				}})
		}
	}
	return steps, nil
}

// FinishParts tells the kind of each part with a failed step that its job failed with
// err, as the part's own job would have told it (its Finished records the failure).
func (e *Engine) FinishParts(ctx context.Context, jc *JobContext, parts []Part, err error) {
	if err == nil {
		return
	}
	rows, rerr := e.Store.JobSteps(ctx, jc.Job.ID)
	if rerr != nil {
		e.Log.Error("jobs: read the steps of a composed job", "job", jc.Job.ID, "err", rerr)
		return
	}
	for i, part := range parts {
		k := e.kinds[part.Kind]
		if k == nil || k.Finished == nil || !partFailed(rows, partPrefix(i)) {
			continue
		}
		sub := *jc
		sub.params = part.Params
		k.Finished(ctx, &sub, err)
	}
}

func partFailed(rows []store.JobStep, prefix string) bool {
	for _, r := range rows {
		if strings.HasPrefix(r.Name, prefix) && r.Status == store.StepFailed {
			return true
		}
	}
	return false
}
