package handlers

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/store"
	"runr.dev/console/views"
)

// wizardDone says which of the five wizard steps a region has done.
func wizardDone(r *store.Region) []bool {
	registry := r.RegistryMode == store.RegistryNone || r.RegistryStatus == store.ComponentReady
	redis := r.RedisMode == store.RedisNone || r.RedisStatus == store.ComponentReady
	return []bool{true, registry, r.OperatorStatus == store.ComponentReady, r.ServingStatus == store.ComponentReady, redis}
}

// RegionWizardPage is the wizard of a created region: steps 3 to 5, each on the engine
// with live progress. It resumes at the first undone step; ?step= opens another (the
// Operator and Serving steps can be skipped).
func (h *Handlers) RegionWizardPage(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	done := wizardDone(r)
	current := -1
	for i, d := range done {
		if !d {
			current = i
			break
		}
	}
	if s, err := strconv.Atoi(c.Query("step")); err == nil && s >= 3 && s <= 5 {
		current = s - 1
	}
	if current == -1 {
		h.flash(c, "Region "+r.Name+" is set up. Create the DNS record shown under DNS configuration.")
		return c.Redirect("/regions/"+r.ID, fiber.StatusSeeOther)
	}
	if current < 2 {
		// Step 2 runs or failed: its job shows where it is.
		if j, err := h.Store.LatestJobOf(ctx(c), r.ID, tabKinds["registry"]); err == nil {
			return c.Redirect("/jobs/"+j.ID, fiber.StatusSeeOther)
		}
		current = 2
	}
	tab := []string{"", "", "operator", "serving", "redis"}[current]
	d, err := h.regionPageData(c, r, tab, views.Form{})
	if err != nil {
		return h.Fail(c, err)
	}
	// The tab is the wizard's step: installs only, and its job's panel follows the step.
	d.InWizard = true
	if d.Job != nil {
		d.Job.WizardStep = current + 1
	}
	body := views.WizardStepBody(h.page(c, r.Name, "regions"), d, current+1, done[current])
	w := views.RegionWizard{Region: d.Region, Current: current, Done: done, Body: body}
	return Render(c, fiber.StatusOK, views.RegionWizardPage(h.page(c, "Add Region: "+r.Name, "regions"), w))
}
