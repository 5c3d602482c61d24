package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/agent"
	"runr.dev/console/crypt"
	"runr.dev/console/ops"
	"runr.dev/console/ops/admission"
	"runr.dev/console/ops/data"
	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/gpu"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/projects"
	"runr.dev/console/ops/redis"
	"runr.dev/console/ops/registry"
	"runr.dev/console/ops/statusblock"
	"runr.dev/console/ops/tenancy"
	"runr.dev/console/perm"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// TabKinds are the job kinds whose latest job a tab shows live.
var TabKinds = map[string][]string{
	"general":   {ops.KindApplySettings, statusblock.KindRegionStatus, ops.KindFunctionTLS, ops.KindRemoveFunctionTLS, ops.KindInstallMonitoring, projects.KindDemoInstall, projects.KindDemoRemove},
	"registry":  {ops.KindRegistrySetup, registry.KindInstall, registry.KindRemove, registry.KindTest, registry.KindContainerdRestart},
	"operator":  {knative.KindInstallOperator, knative.KindInstallKnative, knative.KindUninstallOperator},
	"serving":   {knative.KindInstallServing, knative.KindInstallKnative, knative.KindUpgradeServing, knative.KindUninstallServing, knative.KindUninstallKnative},
	"redis":     {redis.KindRedisInstall, redis.KindRedisRemove, redis.KindRedisTest},
	"workers":   {nodes.KindApplyWorkers, ops.KindRegionInit},
	"isolation": isolation.SandboxKinds,
	"gpu":       gpu.GPUKinds,
	"data":      data.DataKinds,
	// The Supply chain tab.
	"supply-chain": admission.AdmissionKinds,
	"tracing":      {observability.KindTracing},
}

// IsRegionTab reports whether t names a tab of the region page.
func IsRegionTab(t string) bool { return validTab(t) == t }

func validTab(t string) string {
	for _, x := range views.RegionTabs {
		if x.Key == t {
			return t
		}
	}
	return "general"
}

// tabFor is the tab a user asked for when they may see it, else General.
func tabFor(c *fiber.Ctx, t string) string {
	t = validTab(t)
	if t == "isolation" && !Who(c).Perms[perm.SandboxManage] || t == "gpu" && !Who(c).Perms[perm.GPUManage] ||
		t == "data" && !Who(c).Perms[perm.DataServicesManage] {
		return "general"
	}
	if t == "supply-chain" && !Who(c).Perms[perm.SupplyChainManage] || t == "billing" && !Who(c).Perms[perm.BillingView] {
		return "general"
	}
	return t
}

// RegionPageData loads what a tab shows.
func (h *Handlers) RegionPageData(c *fiber.Ctx, r *store.Region, tab string, f views.Form) (views.RegionPageData, error) {
	base, err := h.BaseDomain(c)
	if err != nil {
		return views.RegionPageData{}, err
	}
	domain := domains.FunctionDomain(r, base)
	d := views.RegionPageData{Region: RegionView(r), Domain: domain, DNSInstruction: DNSInstruction(domain, r.ExternalIP), Tab: tab, Form: f,
		Tenancy: h.regionTenancy(c, r)}
	if kinds, ok := TabKinds[tab]; ok {
		if d.Job, err = h.TabJob(c, r, tab, kinds); err != nil {
			return d, err
		}
	}
	if tab == "operator" || tab == "serving" {
		// A chart repository that cannot be read leaves the form without versions; the
		// install then names the problem.
		vs, _ := h.Ops.Knative.RegionVersions(ctx(c), r)
		d.Versions = versionOptions(vs)
		if r.ServingStatus == store.ComponentReady {
			if next, _ := h.Ops.Knative.RegionNextVersion(ctx(c), r); next != nil {
				d.NextVersion = next.Version
			}
		}
	}
	if tab == "general" {
		raw, at, err := h.Store.LatestSnapshot(ctx(c), r.ID)
		if err != nil {
			return d, err
		}
		if raw != nil {
			var snap agent.Snapshot
			if json.Unmarshal(raw, &snap) == nil {
				d.Usage = usageOf(&snap, at)
			}
		}
		if d.Demos, err = h.demoSection(c, r); err != nil {
			return d, err
		}
		if d.ConsoleImageMirror, err = h.Ops.ConsoleImageMirror(ctx(c)); err != nil {
			return d, err
		}
		d.ConsoleCertificate = h.Cfg.ConsoleTLSSecret
	}
	if ex, ok := h.extraTabs[tab]; ok {
		comp, err := ex(c, r)
		if err != nil {
			return d, err
		}
		d.Extra = comp
	}
	return d, nil
}

// regionPageEntry is what the region page cache keeps: the data of a General tab.
type regionPageEntry struct {
	name string
	d    views.RegionPageData
}

// RegionPage is the region page with its tabs. The data of its General tab is kept
// until the region, its jobs or its snapshots change (changecache); the page around it
// is the request's.
func (h *Handlers) RegionPage(c *fiber.Ctx) error {
	key := listCacheKey(Who(c), "region.page", c.Params("id"), c.Query("tab"))
	// The generation before anything is read: the content rendered from a kept entry is
	// kept under the entry's generation, never under a later one it may predate.
	gen := h.regionPages.Begin()
	if v, ok := h.regionPages.GetValue(key); ok {
		return h.renderRegionPage(c, key, gen, v.(regionPageEntry))
	}
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	if h.Cfg.Tenancy && tenancy.SummaryOnly(h.Actor(c), r) {
		row, err := h.assignedRow(c, r)
		if err != nil {
			return h.Fail(c, err)
		}
		return Render(c, fiber.StatusOK, views.AssignedRegionPage(h.Page(c, r.Name, "regions"), row))
	}
	tab := c.Query("tab")
	if tab == "" && r.Health.V.API.State == store.HealthDown {
		// A region whose cluster no longer answers opens on its Migration tab.
		tab = "migration"
	}
	tab = tabFor(c, tab)
	if tab != "general" {
		// Other tabs may show what the cluster answers (versions) or what later features
		// read: never kept.
		return h.renderRegion(c, r, tab, views.Form{}, fiber.StatusOK)
	}
	d, err := h.RegionPageData(c, r, tab, views.Form{})
	if err != nil {
		return h.Fail(c, err)
	}
	e := regionPageEntry{name: r.Name, d: d}
	h.regionPages.Put(key, gen, e, time.Time{})
	return h.renderRegionPage(c, key, gen, e)
}

// csrfMarker stands for the request's CSRF token in the region page content kept
// rendered: random, so that nothing a user wrote can contain it.
var csrfMarker = []byte(crypt.RandomToken("csrf-marker-"))

// renderRegionPage renders a kept General tab, e, read at generation gen. Its content
// is kept rendered for a second (it says how long ago things happened, in seconds) with
// a marker for the CSRF token, which is the request's; the layout is the request's.
func (h *Handlers) renderRegionPage(c *fiber.Ctx, key string, gen uint64, e regionPageEntry) error {
	p := h.Page(c, e.name, "regions")
	htmlKey := key + "\x00html"
	v, ok := h.regionPages.GetValue(htmlKey)
	content, _ := v.([]byte)
	if !ok || content == nil {
		cp := p
		cp.CSRF = string(csrfMarker)
		var buf bytes.Buffer
		if err := views.RegionPageContent(cp, e.d).Render(ctx(c), &buf); err != nil {
			return h.Fail(c, err)
		}
		content = buf.Bytes()
		h.regionPages.Put(htmlKey, gen, content, time.Now().Add(time.Second))
	}
	return Render(c, fiber.StatusOK, views.RegionPageShell(p, bytes.ReplaceAll(content, csrfMarker, []byte(p.CSRF))))
}

func (h *Handlers) renderRegion(c *fiber.Ctx, r *store.Region, tab string, f views.Form, status int) error {
	d, err := h.RegionPageData(c, r, tab, f)
	if err != nil {
		return h.Fail(c, err)
	}
	return Render(c, status, views.RegionPage(h.Page(c, r.Name, "regions"), d))
}

// RegionTab is a tab's body, swapped in by htmx.
func (h *Handlers) RegionTab(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	d, err := h.RegionPageData(c, r, tabFor(c, c.Params("tab")), views.Form{})
	if err != nil {
		return h.Fail(c, err)
	}
	return Render(c, fiber.StatusOK, views.RegionTabSwap(h.Page(c, r.Name, "regions"), d))
}

// RegionForm loads the region of a form post.
func (h *Handlers) RegionForm(c *fiber.Ctx) (*store.Region, error) {
	return h.Store.RegionByID(ctx(c), c.Params("id"))
}

func (h *Handlers) FormDone(c *fiber.Ctx, r *store.Region, tab, flash string) error {
	if flash != "" {
		h.Flash(c, flash)
	}
	// A form of the wizard returns to the wizard.
	if strings.Contains(c.Get("Referer"), "/regions/"+r.ID+"/wizard") {
		return Redirect(c, "/regions/"+r.ID+"/wizard")
	}
	return Redirect(c, "/regions/"+r.ID+"?tab="+tab)
}

// TabFormKey is the Locals key of a tab's form sent back with its errors: a tab rendered
// through the extra-tab hook (Workers) sees no form of its own.
const TabFormKey = "tab_form"

// FormInvalid renders a region tab again with a form's values and its errors (422).
func (h *Handlers) FormInvalid(c *fiber.Ctx, r *store.Region, tab string, values map[string]string, errs FieldErrors, msg string) error {
	f := views.Form{Values: values, Errors: errs, Error: msg}
	if msg == "" && len(errs) > 0 {
		f.Error = "Some fields need another look."
	}
	c.Locals(TabFormKey, f)
	return h.renderRegion(c, r, tab, f, fiber.StatusUnprocessableEntity)
}

// FormOutcome answers a region tab's form after its use case: back to the tab with the
// flash when it went through, the tab again with the messages beside the fields when it
// was refused (422), and Fail for any other error.
func (h *Handlers) FormOutcome(c *fiber.Ctx, r *store.Region, tab string, values map[string]string, err error, flash string) error {
	if err == nil {
		return h.FormDone(c, r, tab, flash)
	}
	fe, msg, ok := h.Refusal(c, err)
	if !ok {
		return h.Fail(c, err)
	}
	return h.FormInvalid(c, r, tab, values, fe, msg)
}

// demoSection is the General tab's Demo projects section.
func (h *Handlers) demoSection(c *fiber.Ctx, r *store.Region) (*views.DemoSection, error) {
	ps, err := h.Store.DemoProjects(ctx(c), r.ID)
	if err != nil {
		return nil, err
	}
	d := &views.DemoSection{Missing: projects.DemoPrerequisites(r)}
	for i := range ps {
		d.Projects = append(d.Projects, views.DemoRow{Name: ps[i].Name, Slug: ps[i].Slug, Kind: ps[i].Kind.Label(),
			State: string(ps[i].State), Message: ps[i].Message})
	}
	return d, nil
}

// TabJob is the region's latest job of kinds as the panel of a tab (nil when there is
// none): live, and once it ends the tab is fetched again, so that nothing on it stays
// as it was before the job.
func (h *Handlers) TabJob(c *fiber.Ctx, r *store.Region, tab string, kinds []string) (*views.JobView, error) {
	j, steps, events, err := h.Store.LatestJobWithHistory(ctx(c), r.ID, kinds, MaxEvents)
	if isNotFoundErr(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	jd := h.jobDataOf(ctx(c), Who(c), j, steps, events)
	jd.Tab = tab
	v := jd.Panel()
	if j.Done() {
		// The job may have ended between the read of the region the tab shows and the
		// read of the job (a job of no time, such as a rollback): the tab would show the
		// region as before it, and the panel a job already over. When the region changed
		// since, the socket counts the end as seen and the tab is fetched again.
		if now, err := h.Store.RegionByID(ctx(c), r.ID); err == nil && !now.UpdatedAt.Equal(r.UpdatedAt) {
			v.EndedUnseen = true
		}
	}
	return v, nil
}

// RegionFormAction answers a region tab's form that runs one use case on the route's
// region: back to the tab with flash (or the job's own message), or the tab again with
// the refusal.
func RegionFormAction(h *Handlers, c *fiber.Ctx, tab, flash string, run func(context.Context, kit.Actor, *store.Region) (*store.Job, error)) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	_, err = run(ctx(c), h.Actor(c), r)
	return h.FormOutcome(c, r, tab, nil, err, flash)
}

// TabPage is the page data of a region tab rendered on its own: only who asks, for its forms.
func TabPage(c *fiber.Ctx) views.Page {
	if pr := Who(c); pr != nil {
		return PrincipalPage(pr, pr.CSRF)
	}
	return views.Page{}
}

// JobRunning reports whether the region's latest job of the kinds is still under way.
func (h *Handlers) JobRunning(c *fiber.Ctx, regionID string, kinds []string) (bool, error) {
	j, err := h.Store.LatestJobOf(ctx(c), regionID, kinds)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return !j.Status.Done(), nil
}
