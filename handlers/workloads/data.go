package workloads

import (
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/data"
	"runr.dev/console/ops/moves"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// dataServiceTitles say what each data service is.
var dataServiceTitles = map[string]string{
	store.DataKV:       "KV: each binding gets its own Redis ACL user on the region's Redis, limited to its own key prefix",
	store.DataObject:   "Object store: SeaweedFS (S3-compatible) in runr-data, or an external S3 endpoint with an IAM API; each binding gets its own bucket and credentials limited to it",
	store.DataPostgres: "PostgreSQL: the CloudNativePG operator in cnpg-system and a PostgreSQL cluster in runr-data; each binding gets its own database and role",
}

// externalObjectRemoveConfirm is the removal's confirmation of an external object store,
// whose data is not the console's to delete.
const externalObjectRemoveConfirm = "Remove the external object store? The console forgets its key; the endpoint and what is on it stay (the bindings' buckets were deleted when they were unbound)."

// dataRemoveConfirm is the confirmation of a service's removal: it says the data goes.
func dataRemoveConfirm(service string) string {
	switch service {
	case store.DataKV:
		return "Remove KV? Its Redis ACL users and every key they wrote are deleted; this cannot be undone."
	case store.DataObject:
		return "Remove the object store? The SeaweedFS release and its volume are deleted with every bucket and object in it; this cannot be undone."
	}
	return "Remove PostgreSQL? The PostgreSQL cluster and its volumes are deleted with every database in them, and CloudNativePG is uninstalled; this cannot be undone."
}

// dataTab is the Data services tab: each service with its bindings, and Skupper.
func (h *Handlers) dataTab(c *fiber.Ctx, r *store.Region) (templ.Component, error) {
	svcs, err := h.Ops.Data.RegionDataServices(c.UserContext(), r)
	if err != nil {
		return nil, err
	}
	d := views.DataData{RegionID: r.ID}
	redisReady := r.RedisStatus == store.ComponentReady && r.RedisAddress != ""
	if f, ok := c.Locals(handlers.TabFormKey).(views.Form); ok {
		d.Form = f
	}
	if moved := moves.DataServicesMoved(r); len(moved) > 0 {
		d.Moved, d.MovedNote = strings.Join(moved, ", "), moves.DataStayedNote
	}
	cctx, cancel := h.ClusterCtx(c)
	defer cancel()
	names, classErr := h.Ops.RegionStorageClasses(cctx, r)
	for _, s := range svcs {
		v := views.DataServiceView{Name: s.Name, Title: dataServiceTitles[s.Name], Status: string(s.Status), Message: s.Message,
			Endpoint: s.Endpoint, StorageClass: s.StorageClass, SizeGi: s.SizeGi, HasVolume: s.Name != store.DataKV,
			Installable: s.Status == store.ComponentNotInstalled || s.Status == store.ComponentError,
			Removable:   s.Status == store.ComponentReady || s.Status == store.ComponentError,
			Confirm:     dataRemoveConfirm(s.Name), Ready: s.Status == store.ComponentReady,
			NeedsRedis: s.Name == store.DataKV && !redisReady, Externalable: s.Name == store.DataObject, External: s.Mode == store.ObjectExternal,
			IAMEndpoint: s.IAMEndpoint, AccessKeyID: s.AccessKeyID, BucketPrefix: s.BucketPrefix}
		if v.External {
			v.HasVolume, v.Confirm = false, externalObjectRemoveConfirm
		}
		if classErr == nil {
			v.StorageClasses = handlers.OptionsOf(names, s.StorageClass)
		}
		for _, b := range s.Bindings {
			v.Bindings = append(v.Bindings, bindingView(b))
		}
		d.Services = append(d.Services, v)
	}
	rep, err := h.Ops.Data.RegionSkupper(cctx, r)
	if err != nil {
		d.SkupperError = h.Cause(c, "The cluster did not answer", err)
	} else {
		d.Skupper = views.SkupperView{Installed: rep.Installed, Version: rep.Version, ControllerNamespace: rep.ControllerNamespace,
			Missing: strings.Join(rep.Missing, " and "), SiteStatus: string(rep.Site.State()), SiteMessage: rep.Site.Message, SiteName: data.SkupperSiteName, Namespace: r.Name,
			SiteSet: rep.Site.State() != store.ComponentNotInstalled, SiteReady: rep.Site.State() == store.ComponentReady}
	}
	if d.Busy, err = h.JobRunning(c, r.ID, data.DataKinds); err != nil {
		return nil, err
	}
	return views.DataTab(handlers.TabPage(c), d), nil
}

// bindingView is a binding for the pages: its settings' names, never their values.
func bindingView(b data.BindingView) views.BindingView {
	return views.BindingView{Service: b.Service, ProjectID: b.ProjectID, ProjectSlug: b.ProjectSlug, Resource: b.Resource,
		Status: string(b.Status), Message: b.Message, Env: strings.Join(b.Env, ", "),
		Unbindable: b.Status == store.ComponentReady || b.Status == store.ComponentError}
}

// DataInstallForm installs a data service from the Data services tab.
func (h *Handlers) DataInstallForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	svc := c.Params("service")
	values := map[string]string{"size_gi": strings.TrimSpace(c.FormValue("size_gi")), "storage_class": c.FormValue("storage_class")}
	// The external object store's fields come back on an error, but never its secret key.
	for _, k := range []string{"mode", "endpoint", "iam_endpoint", "s3_region", "access_key_id", "bucket_prefix"} {
		values[k] = c.FormValue(k)
	}
	in := data.ServiceInput{StorageClass: values["storage_class"], Mode: values["mode"], ExternalObjectStore: data.ExternalObjectStore{
		ExternalEndpoint: data.ExternalEndpoint{Endpoint: values["endpoint"], IAMEndpoint: values["iam_endpoint"], S3Region: values["s3_region"],
			AccessKeyID: values["access_key_id"], BucketPrefix: values["bucket_prefix"]},
		SecretAccessKey: c.FormValue("secret_access_key")}}
	if values["size_gi"] != "" {
		if in.SizeGi, err = strconv.Atoi(values["size_gi"]); err != nil {
			return h.FormInvalid(c, r, "data", values, handlers.FieldErrors{"size_gi": "Use a whole number of GiB."}, "")
		}
	}
	_, err = h.Ops.Data.InstallDataService(c.UserContext(), h.Actor(c), r, svc, in)
	return h.FormOutcome(c, r, "data", values, err, "")
}

// DataRemoveForm removes a data service, with its data, from the Data services tab.
func (h *Handlers) DataRemoveForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	_, err = h.Ops.Data.RemoveDataService(c.UserContext(), h.Actor(c), r, c.Params("service"))
	return h.FormOutcome(c, r, "data", nil, err, "")
}

// SkupperSiteForm creates the Skupper site from the Data services tab.
func (h *Handlers) SkupperSiteForm(c *fiber.Ctx) error {
	return handlers.RegionFormAction(h.Handlers, c, "data", "", h.Ops.Data.CreateSkupperSite)
}

// APIDataServices is GET /api/knative-regions/{id}/data-services: each service with its
// bindings (the names of their settings, never the values).
func (h *Handlers) APIDataServices(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	svcs, err := h.Ops.Data.RegionDataServices(c.UserContext(), r)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(fiber.Map{"data": svcs, "moved": moves.DataServicesMoved(r)})
}

// APIInstallDataService is POST /api/knative-regions/{id}/data-services/{service}
// {"storage_class", "size_gi"} (the body is optional).
func (h *Handlers) APIInstallDataService(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	var in data.ServiceInput
	if len(c.Body()) > 0 {
		if err := handlers.BodyMap(c, &in); err != nil {
			return h.Fail(c, err)
		}
	}
	j, err := h.Ops.Data.InstallDataService(c.UserContext(), h.Actor(c), r, c.Params("service"), in)
	return h.Accepted(c, j, err)
}

// APIRemoveDataService is DELETE /api/knative-regions/{id}/data-services/{service}:
// refused (422, naming them) while bindings use it; it deletes the service's data.
func (h *Handlers) APIRemoveDataService(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Ops.Data.RemoveDataService(c.UserContext(), h.Actor(c), r, c.Params("service"))
	return h.Accepted(c, j, err)
}

// APISkupper is GET /api/knative-regions/{id}/skupper: whether the cluster runs Skupper
// v2 (its CRD and controller), its version and the region's site.
func (h *Handlers) APISkupper(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	cctx, cancel := h.ClusterCtx(c)
	defer cancel()
	rep, err := h.Ops.Data.RegionSkupper(cctx, r)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(rep)
}

// APISkupperSite is POST /api/knative-regions/{id}/skupper/site.
func (h *Handlers) APISkupperSite(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.Data.CreateSkupperSite)
}

// projectBindings are a project's bindings as answers show them.
func (h *Handlers) projectBindings(c *fiber.Ctx, projectID string) ([]data.BindingView, error) {
	bs, err := h.Store.ProjectBindings(c.UserContext(), projectID)
	if err != nil {
		return nil, err
	}
	out := make([]data.BindingView, len(bs))
	for i := range bs {
		out[i] = data.ViewOfBinding(&bs[i])
	}
	return out, nil
}

// APIProjectBindings is GET /api/projects/{id}/bindings.
func (h *Handlers) APIProjectBindings(c *fiber.Ctx) error {
	p, err := h.projectOf(c)
	if err != nil {
		return h.Fail(c, err)
	}
	bs, err := h.projectBindings(c, p.ID)
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusOK, bs, err)
}

// APIBind is POST /api/projects/{id}/bindings {"service"}.
func (h *Handlers) APIBind(c *fiber.Ctx) error {
	p, in, err := handlers.SubjectBody[*store.Project, data.BindInput](c, h.projectOf)
	if err != nil {
		return h.Fail(c, err)
	}
	b, j, err := h.Ops.Data.Bind(c.UserContext(), h.Actor(c), p, in)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"data": data.ViewOfBinding(b), "job_id": j.ID})
}

// APIUnbind is DELETE /api/projects/{id}/bindings/{service}: 202 with the job, or 204
// when the binding's region is gone (it is forgotten at once).
func (h *Handlers) APIUnbind(c *fiber.Ctx) error {
	p, err := h.projectOf(c)
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Ops.Data.Unbind(c.UserContext(), h.Actor(c), p, c.Params("service"))
	if err != nil {
		return h.Fail(c, err)
	}
	if j == nil {
		return c.SendStatus(fiber.StatusNoContent)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": j.ID})
}

// BindForm binds a project from the projects page.
func (h *Handlers) BindForm(c *fiber.Ctx) error {
	p, err := h.projectOf(c)
	if err != nil {
		return h.Fail(c, err)
	}
	_, j, err := h.Ops.Data.Bind(c.UserContext(), h.Actor(c), p, data.BindInput{Service: c.FormValue("service")})
	return h.projectFormOutcome(c, p, j, err)
}

// UnbindForm unbinds a project from the projects page.
func (h *Handlers) UnbindForm(c *fiber.Ctx) error {
	p, err := h.projectOf(c)
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Ops.Data.Unbind(c.UserContext(), h.Actor(c), p, c.Params("service"))
	return h.projectFormOutcome(c, p, j, err)
}

// projectFormOutcome answers a form of the projects page: the job, the list again with
// the refusal (422), or Fail.
func (h *Handlers) projectFormOutcome(c *fiber.Ctx, p *store.Project, j *store.Job, err error) error {
	if fe, msg, ok := h.Refusal(c, err); ok {
		if msg == "" {
			msg = fe.String()
		}
		return h.renderProjects(c, fiber.StatusUnprocessableEntity, views.Form{Error: p.Name + ": " + msg})
	} else if err != nil {
		return h.Fail(c, err)
	}
	if j != nil {
		return handlers.Redirect(c, "/jobs/"+j.ID)
	}
	return handlers.Redirect(c, "/projects")
}
