package workloads

import (
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/projects"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// ProjectJSON is a project for the API: secret env var names, never their values.
type ProjectJSON struct {
	*store.Project
	SecretEnvVars []string `json:"secret_env_vars"`
	URL           string   `json:"url"`
	RegionName    string   `json:"region_name"`
}

// projectOf is the project of the route.
func (h *Handlers) projectOf(c *fiber.Ctx) (*store.Project, error) {
	return h.Store.ProjectByID(c.UserContext(), c.Params("id"))
}

// projectJSON is a project as the API answers it: its secret env names, never values.
func (h *Handlers) projectJSON(c *fiber.Ctx, p *store.Project) ProjectJSON {
	names := make([]string, 0, len(p.Secrets))
	for k := range p.Secrets {
		names = append(names, k)
	}
	out := ProjectJSON{Project: p, SecretEnvVars: names}
	if p.Region() != "" {
		if r, err := h.Store.RegionByID(c.UserContext(), p.Region()); err == nil {
			base, _ := h.Store.BaseDomain(c.UserContext())
			out.RegionName = r.Name
			if d := domains.FunctionDomain(r, base); d != "" {
				out.URL = "https://" + p.Slug + "." + d
			}
		}
	}
	return out
}

// APICreateProject is POST /api/projects.
func (h *Handlers) APICreateProject(c *fiber.Ctx) error {
	var in projects.ProjectInput
	if err := handlers.BodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	p, err := h.Ops.Projects.CreateProject(c.UserContext(), h.Actor(c), in)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"data": h.projectJSON(c, p)})
}

// APIGetProject is GET /api/projects/{id}.
func (h *Handlers) APIGetProject(c *fiber.Ctx) error {
	p, err := h.projectOf(c)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(fiber.Map{"data": h.projectJSON(c, p)})
}

// APIListProjects is GET /api/projects.
func (h *Handlers) APIListProjects(c *fiber.Ctx) error {
	ps, err := h.Store.ListProjects(c.UserContext(), c.Query("region_id"))
	if err != nil {
		return h.Fail(c, err)
	}
	out := make([]ProjectJSON, len(ps))
	for i := range ps {
		out[i] = h.projectJSON(c, &ps[i])
	}
	return c.JSON(fiber.Map{"data": out})
}

// APIUpdateProject is PUT /api/projects/{id} (region_id moves it).
func (h *Handlers) APIUpdateProject(c *fiber.Ctx) error {
	p, in, err := handlers.SubjectBody[*store.Project, projects.ProjectInput](c, h.projectOf)
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Ops.Projects.UpdateProject(c.UserContext(), h.Actor(c), p, in)
	if err != nil {
		return h.Fail(c, err)
	}
	out := fiber.Map{"data": h.projectJSON(c, p)}
	if j != nil {
		out["job_id"] = j.ID
	}
	return c.JSON(out)
}

// APIProjectAction is POST /api/projects/{id}/deploy|stop|resume.
func (h *Handlers) APIProjectAction(action string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		p, err := h.projectOf(c)
		if err != nil {
			return h.Fail(c, err)
		}
		j, err := h.Ops.Projects.ProjectAction(c.UserContext(), h.Actor(c), p, action)
		if err != nil {
			return h.Fail(c, err)
		}
		if j == nil {
			return c.SendStatus(fiber.StatusNoContent)
		}
		return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": j.ID})
	}
}

// ProjectsPage lists the projects and offers to create one.
func (h *Handlers) ProjectsPage(c *fiber.Ctx) error {
	return h.renderProjects(c, fiber.StatusOK, views.Form{})
}

func (h *Handlers) renderProjects(c *fiber.Ctx, status int, f views.Form) error {
	ps, err := h.Store.ListProjects(c.UserContext(), "")
	if err != nil {
		return h.Fail(c, err)
	}
	rs, err := h.Store.ListRegions(c.UserContext(), store.RegionFilter{}, false)
	if err != nil {
		return h.Fail(c, err)
	}
	ready := map[string][]string{}
	for i := range rs {
		for _, name := range store.DataServiceNames {
			if rs[i].DataServices.V.Service(name).Ready() {
				ready[rs[i].ID] = append(ready[rs[i].ID], name)
			}
		}
	}
	rows := make([]views.ProjectRow, len(ps))
	for i := range ps {
		pj := h.projectJSON(c, &ps[i])
		rows[i] = handlers.ProjectRow(&ps[i], pj.RegionName, pj.URL)
		bs, err := h.projectBindings(c, ps[i].ID)
		if err != nil {
			return h.Fail(c, err)
		}
		bound := map[string]bool{}
		for _, b := range bs {
			rows[i].Bindings = append(rows[i].Bindings, bindingView(b))
			bound[b.Service] = true
		}
		for _, svc := range ready[ps[i].Region()] {
			if !bound[svc] {
				rows[i].Bindable = append(rows[i].Bindable, svc)
			}
		}
	}
	return handlers.Render(c, status, views.Projects(h.Page(c, "Projects", "projects"), rows, handlers.RegionOptions(rs), f))
}

func parseEnvLines(s string) (map[string]string, string) {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, "Write one NAME=value per line: " + line
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, ""
}

// CreateProjectForm creates a project from the console.
func (h *Handlers) CreateProjectForm(c *fiber.Ctx) error {
	vals := map[string]string{"name": c.FormValue("name"), "region_id": c.FormValue("region_id"), "image": c.FormValue("image"),
		"env_vars": c.FormValue("env_vars"), "cpu_m": c.FormValue("cpu_m"), "memory_mi": c.FormValue("memory_mi"),
		"gpu_count": c.FormValue("gpu_count"), "gpu_model": c.FormValue("gpu_model"),
		"kind": c.FormValue("kind", string(store.ProjectHTTP)), "schedule": c.FormValue("schedule"), "queue_stream": c.FormValue("queue_stream")}
	vals["data_location"] = c.FormValue("data_location")
	env, m1 := parseEnvLines(vals["env_vars"])
	sec, m2 := parseEnvLines(c.FormValue("secret_env_vars"))
	errs := handlers.FieldErrors{}
	if m1 != "" {
		errs["env_vars"] = m1
	}
	if m2 != "" {
		errs["secret_env_vars"] = m2
	}
	name, region, image := vals["name"], vals["region_id"], vals["image"]
	kind, schedule, stream := store.ProjectKind(vals["kind"]), vals["schedule"], vals["queue_stream"]
	in := projects.ProjectInput{Name: &name, RegionID: &region, Image: &image, EnvVars: &env, SecretEnvVars: &sec,
		Kind: &kind, Schedule: &schedule, QueueStream: &stream}
	var gpus *int
	for k, dst := range map[string]**int{"cpu_m": &in.CPUm, "memory_mi": &in.MemoryMi, "gpu_count": &gpus} {
		if vals[k] != "" {
			n, err := strconv.Atoi(vals[k])
			if err != nil {
				errs[k] = "Use a whole number."
				continue
			}
			*dst = &n
		}
	}
	if gpus != nil || vals["gpu_model"] != "" {
		in.GPU = &store.ProjectGPU{Model: vals["gpu_model"]}
		if gpus != nil {
			in.GPU.Count = *gpus
		}
	}
	if len(errs) > 0 {
		return h.renderProjects(c, fiber.StatusUnprocessableEntity, views.Form{Values: vals, Errors: errs})
	}
	in.DataLocation = store.Ptr(vals["data_location"])
	p, err := h.Ops.Projects.CreateProject(c.UserContext(), h.Actor(c), in)
	if fe, _, ok := h.Refusal(c, err); ok {
		// The API's gpu.count and gpu.model are the form's gpu_count and gpu_model.
		for _, k := range []string{"count", "model"} {
			if m, has := fe["gpu."+k]; has {
				fe["gpu_"+k] = m
			}
		}
		return h.renderProjects(c, fiber.StatusUnprocessableEntity, views.Form{Values: vals, Errors: fe})
	} else if err != nil {
		return h.Fail(c, err)
	}
	h.Flash(c, "Project "+p.Name+" created; deploy it when you are ready.")
	return handlers.Redirect(c, "/projects")
}

// ProjectActionForm deploys, stops, resumes or deletes a project from the console.
func (h *Handlers) ProjectActionForm(c *fiber.Ctx) error {
	p, err := h.projectOf(c)
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Ops.Projects.ProjectAction(c.UserContext(), h.Actor(c), p, c.Params("action"))
	if _, msg, ok := h.Refusal(c, err); ok {
		return h.renderProjects(c, fiber.StatusUnprocessableEntity, views.Form{Error: p.Name + ": " + msg})
	} else if err != nil {
		return h.Fail(c, err)
	}
	if j != nil {
		return handlers.Redirect(c, "/jobs/"+j.ID)
	}
	return handlers.Redirect(c, "/projects")
}

// Handlers are the pages and endpoints of what runs in a region: projects and their demo
// projects, the data services, and the nodes and dedicated workers.
type Handlers struct{ *handlers.Handlers }

// New builds the workloads' handlers and registers their region tabs.
func New(h *handlers.Handlers) *Handlers {
	w := &Handlers{Handlers: h}
	h.AddTab("workers", w.workersTab)
	h.AddTab("data", w.dataTab)
	return w
}
