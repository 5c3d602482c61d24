package regions

// This file: a region's removal (page, form and API).

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// RemoveRegionPage asks for confirmation and whether what RunR installed goes first.
func (h *Handlers) RemoveRegionPage(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	if n, err := h.nonDemoProjects(c, r); err != nil {
		return h.Fail(c, err)
	} else if n > 0 {
		return h.FormInvalid(c, r, "general", nil, nil, "The region still has projects: delete them or move them to another region first.")
	}
	neighbours, err := h.Ops.Neighbours(c.UserContext(), r)
	if err != nil {
		return h.Fail(c, err)
	}
	return handlers.Render(c, fiber.StatusOK, views.RemoveRegion(h.Page(c, "Remove "+r.Name, "regions"), handlers.RegionView(r), neighbours, views.Form{}))
}

// nonDemoProjects is how many of r's projects are not demo projects.
func (h *Handlers) nonDemoProjects(c *fiber.Ctx, r *store.Region) (int, error) {
	demos, err := h.Store.DemoProjects(c.UserContext(), r.ID)
	return r.ProjectCount - len(demos), err
}

// RemoveRegionForm deletes the region's record, or queues the removal of what RunR
// installed followed by the record's (teardown=1) and shows that job.
func (h *Handlers) RemoveRegionForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	teardown := c.FormValue("teardown") != ""
	values := map[string]string{"confirm_name": strings.TrimSpace(c.FormValue("confirm_name"))}
	if teardown {
		values["teardown"] = "1"
	}
	page := func(f views.Form) error {
		f.Values = values
		neighbours, err := h.Ops.Neighbours(c.UserContext(), r)
		if err != nil {
			return h.Fail(c, err)
		}
		return handlers.Render(c, fiber.StatusUnprocessableEntity, views.RemoveRegion(h.Page(c, "Remove "+r.Name, "regions"), handlers.RegionView(r), neighbours, f))
	}
	// The name typed again confirms which region goes: a removal asked of the wrong tab
	// or with a slip of the hand changes nothing.
	if values["confirm_name"] != r.Name {
		return page(views.Form{Errors: map[string]string{"confirm_name": "Type " + r.Name + " exactly to remove this region."}})
	}
	if teardown {
		j, err := h.Ops.Teardown(c.UserContext(), h.Actor(c), r)
		if err != nil {
			if fe, msg, ok := h.Refusal(c, err); ok {
				return page(views.Form{Errors: fe, Error: msg})
			}
			return h.Fail(c, err)
		}
		h.Flash(c, "Removing what RunR installed on the cluster of "+r.Name+"; the region's record goes at the end.")
		return handlers.Redirect(c, "/jobs/"+j.ID)
	}
	// The console removes a record only once no project is left (the API and the CLI keep
	// the projects without a region); the demo projects go with the second choice.
	if r.ProjectCount > 0 {
		return page(views.Form{Error: fmt.Sprintf("The region still has %d project(s): delete them or move them to another region first, or choose to remove what RunR installed (it removes the demo projects).", r.ProjectCount)})
	}
	if err := h.Ops.DeleteRegion(c.UserContext(), h.Actor(c), r); err != nil {
		return h.Fail(c, err)
	}
	h.Flash(c, "Region "+r.Name+" removed. Everything on its cluster keeps running.")
	return handlers.Redirect(c, "/regions")
}

// APIDeleteRegion is DELETE /api/knative-regions/{id}: RunR's record only, nothing is
// removed from the cluster (204); with ?teardown=true what RunR installed is removed
// first, by a job (202 with its id; refused while projects remain). Without teardown the
// region's projects stay, without a region.
func (h *Handlers) APIDeleteRegion(c *fiber.Ctx) error {
	teardown := false
	if v := c.Query("teardown"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return handlers.Invalid(c, handlers.FieldErrors{"teardown": "Use true (remove what RunR installed first) or false (the record only)."})
		}
		teardown = b
	}
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	if teardown {
		j, err := h.Ops.Teardown(c.UserContext(), h.Actor(c), r)
		return h.Accepted(c, j, err)
	}
	if err := h.Ops.DeleteRegion(c.UserContext(), h.Actor(c), r); err != nil {
		return h.Fail(c, err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}
