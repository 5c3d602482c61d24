package workloads

import (
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/projects"
)

// APIDemoProjects is GET /api/knative-regions/{id}/demo-projects: the region's demo
// projects and what it lacks for them.
func (h *Handlers) APIDemoProjects(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	ps, err := h.Store.DemoProjects(c.UserContext(), r.ID)
	if err != nil {
		return h.Fail(c, err)
	}
	out := make([]ProjectJSON, len(ps))
	for i := range ps {
		out[i] = h.projectJSON(c, &ps[i])
	}
	return c.JSON(fiber.Map{"data": out, "missing": projects.DemoPrerequisites(r)})
}

// APIInstallDemos is POST /api/knative-regions/{id}/demo-projects: 422 naming the
// prerequisites that are not ready.
func (h *Handlers) APIInstallDemos(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.Projects.InstallDemos)
}

// APIRemoveDemos is DELETE /api/knative-regions/{id}/demo-projects.
func (h *Handlers) APIRemoveDemos(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.Projects.RemoveDemos)
}

// DemoInstallForm installs (or deploys again) the demo projects from the General tab.
func (h *Handlers) DemoInstallForm(c *fiber.Ctx) error {
	return handlers.RegionFormAction(h.Handlers, c, "general", "", h.Ops.Projects.InstallDemos)
}

// DemoRemoveForm removes the demo projects from the General tab.
func (h *Handlers) DemoRemoveForm(c *fiber.Ctx) error {
	return handlers.RegionFormAction(h.Handlers, c, "general", "", h.Ops.Projects.RemoveDemos)
}
