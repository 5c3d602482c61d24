package handlers

import (
	"encoding/json"

	"runr.dev/console/store"
	"runr.dev/console/views"
)

// JobData is a job loaded for its live view and the API: the job, its steps and its
// events, with what its panel offers and where the panel is shown.
type JobData struct {
	Job    *store.Job
	Steps  []store.JobStep
	Events []store.JobEvent
	views.JobPanelOptions
}

// jobPhases are how the live view draws the jobs' statuses.
var jobPhases = map[store.JobStatus]views.Phase{
	store.JobQueued: views.PhaseQueued, store.JobRunning: views.PhaseRunning, store.JobSucceeded: views.PhaseDone,
	store.JobFailed: views.PhaseFailed, store.JobCancelled: views.PhaseFailed,
}

// stepPhases are how the live view draws the steps' statuses.
var stepPhases = map[store.StepStatus]views.Phase{
	store.StepPending: views.PhasePending, store.StepRunning: views.PhaseRunning, store.StepDone: views.PhaseDone,
	store.StepSkipped: views.PhaseSkipped, store.StepFailed: views.PhaseFailed,
}

// Progress returns the finished share of the steps, in percent.
func (d JobData) Progress() int {
	if len(d.Steps) == 0 {
		return 0
	}
	n := 0
	for _, s := range d.Steps {
		if s.Status == store.StepDone || s.Status == store.StepSkipped {
			n++
		}
	}
	return n * 100 / len(d.Steps)
}

// CurrentWait is the named wait of the running step ("" when none).
func (d JobData) CurrentWait() string {
	for _, s := range d.Steps {
		if s.Status == store.StepRunning && s.Wait != "" {
			return s.Wait
		}
	}
	return ""
}

// View is the job as its live view shows it.
func (d JobData) View() views.JobView {
	j := d.Job
	v := views.JobView{ID: j.ID, Title: j.Title, Status: string(j.Status), Phase: jobPhases[j.Status],
		Failed: j.Status == store.JobFailed, Retryable: j.Status == store.JobFailed || j.Status == store.JobCancelled,
		Succeeded: j.Status == store.JobSucceeded, Done: j.Done(), Error: j.Error, StartedAt: j.StartedAt, FinishedAt: j.FinishedAt,
		RegionID: j.Region(), Progress: d.Progress(), Wait: d.CurrentWait(), WizardState: wizardState(j.Status),
		JobPanelOptions: d.JobPanelOptions}
	for _, s := range d.Steps {
		v.Steps = append(v.Steps, stepView(s))
	}
	for _, e := range d.Events {
		if inLog(e) {
			v.Log = append(v.Log, logLine(e, d.Steps))
		}
	}
	return v
}

// Panel is the job's view for the panel of a page that shows it.
func (d JobData) Panel() *views.JobView {
	v := d.View()
	return &v
}

// wizardState is the state of a wizard step whose job has a status.
func wizardState(s store.JobStatus) views.WizardState {
	switch s {
	case store.JobSucceeded:
		return views.WizardDone
	case store.JobFailed, store.JobCancelled:
		return views.WizardFailed
	}
	return views.WizardCurrent
}

// stepView is a step of a job as its row shows it.
func stepView(s store.JobStep) views.StepView {
	v := views.StepView{Idx: s.Idx, Name: s.Name, Title: s.Title, Status: string(s.Status), Phase: stepPhases[s.Status],
		Message: s.Message, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt}
	if s.Status == store.StepRunning {
		v.Wait = s.Wait
	}
	return v
}

// inLog reports whether an event is a line of the job's log: a log line, a wait, or
// the job's start or end.
func inLog(e store.JobEvent) bool { return e.Kind == "log" || e.Kind == "wait" || e.Kind == "job" }

// logLine is an event as a line of the job's log, named after its step (steps can run
// side by side).
func logLine(e store.JobEvent, steps []store.JobStep) views.LogLine {
	l := views.LogLine{At: e.CreatedAt, Text: logText(e), Error: e.Level == "error", Warn: e.Level == "warn"}
	if e.Kind != "job" && e.StepIdx >= 0 && e.StepIdx < len(steps) {
		l.Step = steps[e.StepIdx].Name
	}
	return l
}

// logText is what the log shows of an event; a job event says what became of the job.
func logText(e store.JobEvent) string {
	if e.Kind != "job" {
		return e.Message
	}
	var v struct{ Status store.JobStatus }
	_ = json.Unmarshal(e.Data, &v)
	switch {
	case v.Status == store.JobFailed && e.Message != "":
		return "Job failed: " + e.Message
	case e.Message != "":
		return e.Message
	case v.Status != "":
		return "Job " + string(v.Status)
	}
	return ""
}

// jobChange is what an event changes on a job's page; step is the step it is about
// (nil when none).
func jobChange(e store.JobEvent, step *store.JobStep, steps []store.JobStep) views.JobChange {
	ch := views.JobChange{JobChanged: e.Kind == "job"}
	if step != nil {
		sv := stepView(*step)
		ch.Step = &sv
	}
	if inLog(e) {
		l := logLine(e, steps)
		ch.Line = &l
	}
	return ch
}
