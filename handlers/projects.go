package handlers

import (
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/engine"
	"runr.dev/console/ops"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// ProjectInput is the body of POST /api/projects and PUT /api/projects/{id}.
type ProjectInput struct {
	Name          *string            `json:"name"`
	RegionID      *string            `json:"region_id"`
	Image         *string            `json:"image"`
	EnvVars       *map[string]string `json:"env_vars"`
	SecretEnvVars *map[string]string `json:"secret_env_vars"`
	CPUm          *int               `json:"cpu_m"`
	MemoryMi      *int               `json:"memory_mi"`
	AlwaysOn      *bool              `json:"always_on"`
	// Config is the shape of PUT /api/projects/{id} in upgrading.md: {"config": {"env_vars": …, "secret_env_vars": …}}.
	Config *struct {
		EnvVars       *map[string]string `json:"env_vars"`
		SecretEnvVars *map[string]string `json:"secret_env_vars"`
	} `json:"config"`
}

// ProjectJSON is a project for the API: secret env var names, never their values.
type ProjectJSON struct {
	*store.Project
	SecretEnvVars []string `json:"secret_env_vars"`
	URL           string   `json:"url"`
	RegionName    string   `json:"region_name"`
}

func (h *Handlers) projectJSON(c *fiber.Ctx, p *store.Project) ProjectJSON {
	names := make([]string, 0, len(p.Secrets))
	for k := range p.Secrets {
		names = append(names, k)
	}
	out := ProjectJSON{Project: p, SecretEnvVars: names}
	if p.Region() != "" {
		if r, err := h.Store.RegionByID(ctx(c), p.Region()); err == nil {
			base, _ := h.Store.BaseDomain(ctx(c))
			out.RegionName = r.Name
			if d := KnativeDomain(r, base); d != "" {
				out.URL = "https://" + p.Slug + "." + d
			}
		}
	}
	return out
}

var envNameOK = func(k string) bool {
	if k == "" || len(k) > 128 {
		return false
	}
	for i, ch := range k {
		if !(ch == '_' || ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || i > 0 && ch >= '0' && ch <= '9') {
			return false
		}
	}
	return true
}

// applyProjectInput validates the keys sent and applies them to p.
func (h *Handlers) applyProjectInput(c *fiber.Ctx, p *store.Project, in ProjectInput, creating bool) FieldErrors {
	errs := FieldErrors{}
	if in.Config != nil {
		if in.Config.EnvVars != nil {
			in.EnvVars = in.Config.EnvVars
		}
		if in.Config.SecretEnvVars != nil {
			in.SecretEnvVars = in.Config.SecretEnvVars
		}
	}
	if in.Name != nil {
		p.Name = strings.TrimSpace(*in.Name)
	}
	if creating && p.Name == "" || len(p.Name) > 100 {
		errs["name"] = "Give the project a name of up to 100 characters."
	}
	if in.RegionID != nil {
		if *in.RegionID == "" {
			p.RegionID = nil
		} else if _, err := h.Store.RegionByID(ctx(c), *in.RegionID); err != nil {
			errs["region_id"] = "No such region."
		} else {
			id := *in.RegionID
			p.RegionID = &id
		}
	}
	if creating && p.RegionID == nil {
		errs["region_id"] = "Choose the region the project runs in."
	}
	if in.Image != nil {
		p.Image = strings.TrimSpace(*in.Image)
		if strings.ContainsAny(p.Image, " \t\n") {
			errs["image"] = "An image reference has no spaces, e.g. ghcr.io/acme/shop:1.2."
		}
	}
	if creating && p.Image == "" {
		errs["image"] = "Give the image to run, e.g. ghcr.io/acme/shop:1.2."
	}
	check := func(field string, m *map[string]string) {
		for k := range *m {
			if !envNameOK(k) {
				errs[field] = "Not a valid variable name: " + k + " (letters, digits and _)."
			}
		}
	}
	if in.EnvVars != nil {
		check("env_vars", in.EnvVars)
		p.EnvVars.V = *in.EnvVars
	}
	if in.SecretEnvVars != nil {
		check("secret_env_vars", in.SecretEnvVars)
		p.Secrets = *in.SecretEnvVars
	}
	for k := range p.Secrets {
		if _, dup := p.EnvVars.V[k]; dup {
			errs["secret_env_vars"] = k + " is both a plain and a secret variable: keep one."
		}
	}
	if in.CPUm != nil {
		if *in.CPUm < 10 || *in.CPUm > 64000 {
			errs["cpu_m"] = "Use 10 to 64000 millicores."
		}
		p.CPUm = *in.CPUm
	}
	if in.MemoryMi != nil {
		if *in.MemoryMi < 16 || *in.MemoryMi > 262144 {
			errs["memory_mi"] = "Use 16 to 262144 MiB."
		}
		p.MemoryMi = *in.MemoryMi
	}
	if in.AlwaysOn != nil {
		p.AlwaysOn = *in.AlwaysOn
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

func (h *Handlers) enqueueProject(c *fiber.Ctx, p *store.Project, kind, title string, params ops.ProjectParams) (*store.Job, error) {
	params.ProjectID = p.ID
	return h.Kube.Enqueue(ctx(c), engine.Request{Kind: kind, Title: title + " " + p.Slug, Subject: p.Region(), Params: params, CreatedBy: Who(c).User.Email})
}

// APICreateProject is POST /api/projects.
func (h *Handlers) APICreateProject(c *fiber.Ctx) error {
	var in ProjectInput
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	p := &store.Project{CPUm: 100, MemoryMi: 128}
	if fe := h.applyProjectInput(c, p, in, true); fe != nil {
		return Invalid(c, fe)
	}
	if err := h.Store.CreateProject(ctx(c), p); err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"data": h.projectJSON(c, p)})
}

// APIGetProject is GET /api/projects/{id}.
func (h *Handlers) APIGetProject(c *fiber.Ctx) error {
	p, err := h.Store.ProjectByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(fiber.Map{"data": h.projectJSON(c, p)})
}

// APIListProjects is GET /api/projects.
func (h *Handlers) APIListProjects(c *fiber.Ctx) error {
	ps, err := h.Store.ListProjects(ctx(c), c.Query("region_id"))
	if err != nil {
		return h.Fail(c, err)
	}
	out := make([]ProjectJSON, len(ps))
	for i := range ps {
		out[i] = h.projectJSON(c, &ps[i])
	}
	return c.JSON(fiber.Map{"data": out})
}

// updateProject saves the keys sent; a running project that changes region moves.
func (h *Handlers) updateProject(c *fiber.Ctx, p *store.Project, in ProjectInput) (*store.Job, FieldErrors, error) {
	from := p.Region()
	if fe := h.applyProjectInput(c, p, in, false); fe != nil {
		return nil, fe, nil
	}
	if err := h.Store.UpdateProject(ctx(c), p); err != nil {
		return nil, nil, err
	}
	if p.Region() != from && p.State == store.ProjectRunning {
		j, err := h.enqueueProject(c, p, ops.KindMoveProject, "Move", ops.ProjectParams{From: from})
		return j, nil, err
	}
	return nil, nil, nil
}

// APIUpdateProject is PUT /api/projects/{id} (region_id moves it).
func (h *Handlers) APIUpdateProject(c *fiber.Ctx) error {
	p, err := h.Store.ProjectByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	var in ProjectInput
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	j, fe, err := h.updateProject(c, p, in)
	if err != nil {
		return h.Fail(c, err)
	}
	if fe != nil {
		return Invalid(c, fe)
	}
	out := fiber.Map{"data": h.projectJSON(c, p)}
	if j != nil {
		out["job_id"] = j.ID
	}
	return c.JSON(out)
}

// projectAction queues deploy, stop, resume or delete, after the checks that need no cluster.
func (h *Handlers) projectAction(c *fiber.Ctx, p *store.Project, action string) (*store.Job, string, error) {
	if p.Region() == "" && action != "delete" {
		return nil, "The project has no region: choose one first.", nil
	}
	switch action {
	case "deploy":
		if p.State == store.ProjectStopped {
			return nil, ops.ErrProjectStopped.Error(), nil
		}
		j, err := h.enqueueProject(c, p, ops.KindDeployProject, "Deploy", ops.ProjectParams{})
		return j, "", err
	case "resume":
		if p.State != store.ProjectStopped {
			return nil, "Only a stopped project resumes; this one is " + string(p.State) + ".", nil
		}
		j, err := h.enqueueProject(c, p, ops.KindDeployProject, "Resume", ops.ProjectParams{Resume: true})
		return j, "", err
	case "stop":
		if p.State != store.ProjectRunning {
			return nil, "Only a running project stops; this one is " + string(p.State) + ".", nil
		}
		j, err := h.enqueueProject(c, p, ops.KindStopProject, "Stop", ops.ProjectParams{})
		return j, "", err
	case "delete":
		if p.Region() == "" {
			return nil, "", h.Store.DeleteProject(ctx(c), p.ID)
		}
		j, err := h.enqueueProject(c, p, ops.KindDeleteProject, "Delete", ops.ProjectParams{})
		return j, "", err
	}
	return nil, "", store.ErrNotFound
}

// APIProjectAction is POST /api/projects/{id}/deploy|stop|resume.
func (h *Handlers) APIProjectAction(action string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		p, err := h.Store.ProjectByID(ctx(c), c.Params("id"))
		if err != nil {
			return h.Fail(c, err)
		}
		j, msg, err := h.projectAction(c, p, action)
		if err != nil {
			return h.Fail(c, err)
		}
		if msg != "" {
			return Unprocessable(c, msg)
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
	ps, err := h.Store.ListProjects(ctx(c), "")
	if err != nil {
		return h.Fail(c, err)
	}
	rs, err := h.Store.ListRegions(ctx(c), store.RegionFilter{}, false)
	if err != nil {
		return h.Fail(c, err)
	}
	rows := make([]views.ProjectRow, len(ps))
	for i := range ps {
		pj := h.projectJSON(c, &ps[i])
		rows[i] = projectRow(&ps[i], pj.RegionName, pj.URL)
	}
	return Render(c, status, views.Projects(h.page(c, "Projects", "projects"), rows, regionOptions(rs), f))
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
		"env_vars": c.FormValue("env_vars"), "cpu_m": c.FormValue("cpu_m"), "memory_mi": c.FormValue("memory_mi")}
	env, m1 := parseEnvLines(vals["env_vars"])
	sec, m2 := parseEnvLines(c.FormValue("secret_env_vars"))
	errs := FieldErrors{}
	if m1 != "" {
		errs["env_vars"] = m1
	}
	if m2 != "" {
		errs["secret_env_vars"] = m2
	}
	name, region, image := vals["name"], vals["region_id"], vals["image"]
	in := ProjectInput{Name: &name, RegionID: &region, Image: &image, EnvVars: &env, SecretEnvVars: &sec}
	for k, dst := range map[string]**int{"cpu_m": &in.CPUm, "memory_mi": &in.MemoryMi} {
		if vals[k] != "" {
			n, err := strconv.Atoi(vals[k])
			if err != nil {
				errs[k] = "Use a whole number."
				continue
			}
			*dst = &n
		}
	}
	p := &store.Project{CPUm: 100, MemoryMi: 128}
	if len(errs) == 0 {
		if fe := h.applyProjectInput(c, p, in, true); fe != nil {
			errs = fe
		}
	}
	if len(errs) > 0 {
		return h.renderProjects(c, fiber.StatusUnprocessableEntity, views.Form{Values: vals, Errors: errs})
	}
	if err := h.Store.CreateProject(ctx(c), p); err != nil {
		return h.Fail(c, err)
	}
	h.flash(c, "Project "+p.Name+" created; deploy it when you are ready.")
	return redirect(c, "/projects")
}

// ProjectActionForm deploys, stops, resumes or deletes a project from the console.
func (h *Handlers) ProjectActionForm(c *fiber.Ctx) error {
	p, err := h.Store.ProjectByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	j, msg, err := h.projectAction(c, p, c.Params("action"))
	if err != nil {
		return h.Fail(c, err)
	}
	if msg != "" {
		return h.renderProjects(c, fiber.StatusUnprocessableEntity, views.Form{Error: p.Name + ": " + msg})
	}
	if j != nil {
		return redirect(c, "/jobs/"+j.ID)
	}
	return redirect(c, "/projects")
}
