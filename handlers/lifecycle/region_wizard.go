package lifecycle

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/perm"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// wizardTabs are the region tabs the wizard's steps 3 to 7 show.
var wizardTabs = []string{"", "", "operator", "serving", "redis", "isolation", "migration"}

// wizardDone says which of the seven wizard steps a region has done: step 6 once a
// sandbox runtime is ready, step 7 once a move completed.
func wizardDone(r *store.Region) []bool {
	registry := r.RegistryMode == store.RegistryNone || r.RegistryStatus == store.ComponentReady
	redis := r.RedisMode == store.RedisNone || r.RedisStatus == store.ComponentReady
	return []bool{true, registry, r.OperatorStatus == store.ComponentReady, r.ServingStatus == store.ComponentReady, redis,
		len(isolation.InstalledClasses(r.Isolation.V)) > 0, r.MigrationStatus == store.MigrationCompleted}
}

// wizardFirstOpen is the first step (index) the wizard may still open: the steps before
// a done Sandbox or Migration step are read-only. (Those two are done only by what the
// administrator does in them; Redis is queued by step 2 and often done before steps 3
// and 4, which would otherwise lock the Operator and Serving steps of a region whose
// administrator skipped them.)
func wizardFirstOpen(done []bool) int {
	for i := len(done) - 1; i >= 5; i-- {
		if done[i] {
			return i
		}
	}
	return 2
}

// RegionWizardPage is the wizard of a created region: steps 3 to 7, each on the engine
// with live progress. It resumes at the first undone step it may open; ?step= opens
// another (every step from 3 on can be skipped).
func (h *Handlers) RegionWizardPage(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	done := wizardDone(r)
	if !done[1] {
		// Step 2 runs or failed: its job shows where it is.
		if j, err := h.Store.LatestJobOf(c.UserContext(), r.ID, handlers.TabKinds["registry"]); err == nil {
			return c.Redirect("/jobs/"+j.ID, fiber.StatusSeeOther)
		}
	}
	first := wizardFirstOpen(done)
	current := -1
	for i := first; i < len(done); i++ {
		if !done[i] {
			current = i
			break
		}
	}
	if s, err := strconv.Atoi(c.Query("step")); err == nil && s-1 >= first && s <= len(done) {
		current = s - 1
	}
	if current == -1 {
		h.Flash(c, "Region "+r.Name+" is set up. Create the DNS record shown under DNS configuration.")
		return c.Redirect("/regions/"+r.ID, fiber.StatusSeeOther)
	}
	tab := wizardTabs[current]
	if tab == "isolation" && !handlers.Who(c).Perms[perm.SandboxManage] {
		// The Sandbox step needs sandbox.manage; without it the wizard goes on to Migration.
		current, tab = 6, wizardTabs[6]
	}
	c.Locals(handlers.InWizardKey, true)
	d, err := h.RegionPageData(c, r, tab, views.Form{})
	if err != nil {
		return h.Fail(c, err)
	}
	// The tab is the wizard's step: installs only, and its job's panel follows the step.
	d.InWizard = true
	if d.Job != nil {
		d.Job.WizardStep = current + 1
	}
	body := views.WizardStepBody(h.Page(c, r.Name, "regions"), d, current+1, done[current])
	w := views.RegionWizard{Region: d.Region, Current: current, Done: done, Body: body}
	return handlers.Render(c, fiber.StatusOK, views.RegionWizardPage(h.Page(c, "Add Region: "+r.Name, "regions"), w))
}
