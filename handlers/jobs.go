package handlers

import (
	"context"

	"runr.dev/console/ops"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/redis"
	"runr.dev/console/perm"
	"runr.dev/console/store"
)

// MaxEvents is how many events a page or a feed returns at once.
const MaxEvents = 5000

// JobData loads what the live view of a job needs.
func (h *Handlers) JobData(ctx context.Context, p *Principal, id string) (JobData, error) {
	j, steps, events, err := h.Store.JobWithHistory(ctx, id, MaxEvents)
	if err != nil {
		return JobData{}, err
	}
	return h.jobDataOf(ctx, p, j, steps, events), nil
}

// jobDataOf is JobData of a job, its steps and its events already read.
func (h *Handlers) jobDataOf(ctx context.Context, p *Principal, j *store.Job, steps []store.JobStep, events []store.JobEvent) JobData {
	id := j.ID
	d := JobData{Job: j, Steps: steps, Events: events}
	d.CanRetry = p.Can(perm.RegionsManage)
	d.NextURL, d.NextLabel = nextAfter(j)
	if j.Kind == ops.KindRegistrySetup && d.CanRetry && p.Can(perm.RegistryManage) {
		// A failed setup's fields can be changed on its page before a retry.
		if st, err := h.Store.SetupByJob(ctx, id); err == nil {
			d.SetupURL = "/regions/setups/" + st.Token
		}
	}
	return d
}

// nextAfter is where the wizard continues after a job.
func nextAfter(j *store.Job) (string, string) {
	if j.Region() == "" {
		return "", ""
	}
	switch j.Kind {
	case ops.KindRegistrySetup, knative.KindInstallOperator, knative.KindInstallServing, redis.KindRedisInstall, isolation.KindSandboxInstall:
		return "/regions/" + j.Region() + "/wizard", "Continue"
	}
	return "/regions/" + j.Region(), "Back to the region"
}
