package handlers

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/engine"
	"runr.dev/console/ops"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// clusterReadTimeout bounds the cluster reads a request makes (nodes, capacity).
const clusterReadTimeout = 15 * time.Second

// workersFormKey is the Locals key of a Workers tab form sent back with its errors: the
// tab is rendered through the extra-tab hook, which sees no form of its own.
const workersFormKey = "workers_form"

func (h *Handlers) clusterCtx(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx(c), clusterReadTimeout)
}

// clusterFailed answers a cluster that did not answer a read: 502 with the reason.
func (h *Handlers) clusterFailed(c *fiber.Ctx, r *store.Region, err error) error {
	return JSONError(c, fiber.StatusBadGateway, h.Cause(c, "The cluster of region "+r.Name+" did not answer", err))
}

// workersTab renders the Workers tab: nodes, cluster shape, preflight, dedicated
// workers, capacity and admission.
func (h *Handlers) workersTab(c *fiber.Ctx, r *store.Region) (templ.Component, error) {
	d := views.WorkersData{Region: regionView(r), MinK8sMinor: h.Cfg.MinK8sMinor}
	if f, ok := c.Locals(workersFormKey).(views.Form); ok {
		d.Form = f
	}
	cctx, cancel := h.clusterCtx(c)
	defer cancel()
	nodes, err := h.Kube.Nodes(cctx, r)
	if err == nil {
		d.Nodes = nodesReport(nodes)
		var capa *ops.CapacityReport
		if capa, err = h.Kube.RegionCapacity(cctx, r, ""); err == nil {
			d.Capacity = capacityOf(capa)
		}
	}
	if err != nil {
		d.ClusterError = h.Cause(c, "The cluster did not answer", err)
	}
	if j, err := h.Store.LatestJobOf(ctx(c), r.ID, ops.NodeKinds); err == nil {
		jd, err := h.JobData(ctx(c), Who(c), j.ID)
		if err != nil {
			return nil, err
		}
		d.Job = jd.panel()
	} else if !isNotFoundErr(err) {
		return nil, err
	}
	// The page's own data (flash, banners) is built by the region page; the tab needs
	// only who is asking, for its forms.
	p := views.Page{}
	if pr := Who(c); pr != nil {
		p = principalPage(pr, pr.CSRF)
	}
	return views.WorkersTab(p, d), nil
}

// APINodes is GET /api/knative-regions/{id}/nodes: every node with its roles, heartbeat,
// resources and preflight, and the warnings about the cluster's shape.
func (h *Handlers) APINodes(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	cctx, cancel := h.clusterCtx(c)
	defer cancel()
	rep, err := h.Kube.Nodes(cctx, r)
	if err != nil {
		return h.clusterFailed(c, r, err)
	}
	return c.JSON(fiber.Map{"data": rep.Nodes, "control_planes": rep.ControlPlanes, "warnings": rep.Warnings,
		"dedicated_workers": rep.DedicatedWorkers, "checked_at": rep.CheckedAt})
}

// APICapacity is GET /api/knative-regions/{id}/capacity: the region capacity and its
// always-on and FaaS budgets.
func (h *Handlers) APICapacity(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	cctx, cancel := h.clusterCtx(c)
	defer cancel()
	rep, err := h.Kube.RegionCapacity(cctx, r, "")
	if err != nil {
		return h.clusterFailed(c, r, err)
	}
	return c.JSON(fiber.Map{"data": rep})
}

// WorkersInput is the body of PUT /api/knative-regions/{id}/workers.
type WorkersInput struct {
	Nodes *[]string `json:"nodes"`
}

// setWorkers checks a selection of dedicated workers against the cluster's nodes and
// queues the job that labels and taints them (and clears the deselected ones).
func (h *Handlers) setWorkers(c *fiber.Ctx, r *store.Region, nodes []string) (*store.Job, FieldErrors, error) {
	var sel []string
	seen := map[string]bool{}
	for _, n := range nodes {
		n = strings.TrimSpace(n)
		if n != "" && !seen[n] {
			seen[n] = true
			sel = append(sel, n)
		}
	}
	if sel == nil {
		sel = []string{}
	}
	cctx, cancel := h.clusterCtx(c)
	defer cancel()
	names, err := h.Kube.NodeNames(cctx, r)
	if err != nil {
		return nil, nil, clusterError{err}
	}
	if m := nodesExist(sel, &ops.CheckResult{Nodes: nodeInfos(names)}); m != "" {
		return nil, FieldErrors{"nodes": m}, nil
	}
	title := "Dedicated workers of " + r.Name
	if len(sel) == 0 {
		title = "Clear the dedicated workers of " + r.Name
	}
	j, err := h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindApplyWorkers, Title: title,
		Subject: r.ID, Params: ops.WorkersParams{Nodes: sel}, CreatedBy: Who(c).User.Email})
	if err != nil {
		return nil, nil, err
	}
	h.Log.Info("dedicated workers changed", "region", r.Name, "from", []string(r.Nodes), "to", sel, "user", Who(c).User.Email)
	return j, nil, nil
}

func nodeInfos(names []string) []ops.NodeInfo {
	out := make([]ops.NodeInfo, len(names))
	for i, n := range names {
		out[i] = ops.NodeInfo{Name: n}
	}
	return out
}

// clusterError marks an error of a cluster read made while handling a change.
type clusterError struct{ err error }

func (e clusterError) Error() string { return e.err.Error() }
func (e clusterError) Unwrap() error { return e.err }

// failChange answers an error of a change handler: a cluster that did not answer is a
// 502 (in the API) or a message on the tab, anything else goes to Fail.
func (h *Handlers) failChange(c *fiber.Ctx, r *store.Region, err error) error {
	ce, ok := err.(clusterError)
	if !ok {
		return h.Fail(c, err)
	}
	if IsAPI(c) {
		return h.clusterFailed(c, r, ce.err)
	}
	return h.workersInvalid(c, r, nil, nil, h.Cause(c, "The cluster did not answer", ce.err))
}

// APISetWorkers is PUT /api/knative-regions/{id}/workers with {"nodes": [...]}: 202 with
// the job that applies the selection; 422 for a node the cluster does not have.
func (h *Handlers) APISetWorkers(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	var in WorkersInput
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	if in.Nodes == nil {
		return Invalid(c, FieldErrors{"nodes": "Send nodes, the list of node names to dedicate ([] clears the selection)."})
	}
	j, fe, err := h.setWorkers(c, r, *in.Nodes)
	if err != nil {
		return h.failChange(c, r, err)
	}
	if fe != nil {
		return Invalid(c, fe)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": j.ID})
}

// removeWorker takes one node out of the region's dedicated workers.
func (h *Handlers) removeWorker(c *fiber.Ctx, r *store.Region, node string) (*store.Job, string, error) {
	var keep []string
	found := false
	for _, n := range r.Nodes {
		if n == node {
			found = true
		} else {
			keep = append(keep, n)
		}
	}
	if !found {
		return nil, node + " is not one of the region's dedicated workers.", nil
	}
	if keep == nil {
		keep = []string{}
	}
	j, err := h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindApplyWorkers, Title: "Remove " + node + " from the dedicated workers of " + r.Name,
		Subject: r.ID, Params: ops.WorkersParams{Nodes: keep}, CreatedBy: Who(c).User.Email})
	return j, "", err
}

// APIRemoveWorker is DELETE /api/knative-regions/{id}/workers/{node}: the node leaves the
// dedicated workers (its label and taint are removed); 202 with the job.
func (h *Handlers) APIRemoveWorker(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	j, msg, err := h.removeWorker(c, r, c.Params("node"))
	if err != nil {
		return h.Fail(c, err)
	}
	if msg != "" {
		return Unprocessable(c, msg)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": j.ID})
}

// OvercommitInput is the body of PUT /api/knative-regions/{id}/overcommit: only the keys sent change.
type OvercommitInput struct {
	CPU    *float64 `json:"faas_cpu_overcommit"`
	Memory *float64 `json:"faas_memory_overcommit"`
}

func validateOvercommit(in OvercommitInput) FieldErrors {
	errs := FieldErrors{}
	check := func(key string, v *float64) {
		if v != nil && (*v < ops.MinOvercommit || *v > ops.MaxOvercommit) {
			errs[key] = fmt.Sprintf("Use a factor from %d to %d.", ops.MinOvercommit, ops.MaxOvercommit)
		}
	}
	check("faas_cpu_overcommit", in.CPU)
	check("faas_memory_overcommit", in.Memory)
	if in.CPU == nil && in.Memory == nil {
		errs["faas_cpu_overcommit"] = "Send faas_cpu_overcommit, faas_memory_overcommit or both."
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// setOvercommit saves the FaaS overcommit factors; the next admission uses them.
func (h *Handlers) setOvercommit(c *fiber.Ctx, r *store.Region, in OvercommitInput) (FieldErrors, error) {
	if fe := validateOvercommit(in); fe != nil {
		return fe, nil
	}
	if err := h.Store.SetOvercommit(ctx(c), r.ID, in.CPU, in.Memory); err != nil {
		return nil, err
	}
	h.Log.Info("overcommit changed", "region", r.Name, "cpu", in.CPU, "memory", in.Memory, "user", Who(c).User.Email)
	return nil, nil
}

// APISetOvercommit is PUT /api/knative-regions/{id}/overcommit; 422 outside 1–10.
func (h *Handlers) APISetOvercommit(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	var in OvercommitInput
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	fe, err := h.setOvercommit(c, r, in)
	if err != nil {
		return h.Fail(c, err)
	}
	if fe != nil {
		return Invalid(c, fe)
	}
	r, err = h.Store.RegionByID(ctx(c), r.ID)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(fiber.Map{"data": fiber.Map{"faas_cpu_overcommit": r.FaaSCPUOvercommit, "faas_memory_overcommit": r.FaaSMemoryOvercommit}})
}

// nodeActions are the node actions that run as jobs, by the name in their route.
var nodeActions = map[string]struct{ kind, verb string }{
	"cordon":   {ops.KindNodeCordon, "Cordon"},
	"uncordon": {ops.KindNodeUncordon, "Uncordon"},
	"drain":    {ops.KindNodeDrain, "Drain"},
}

// enqueueNodeAction queues a cordon, uncordon or drain of a node the cluster has.
// missing is the answer for a node it does not have.
func (h *Handlers) enqueueNodeAction(c *fiber.Ctx, r *store.Region, action, node string, timeout int) (j *store.Job, missing string, err error) {
	a, ok := nodeActions[action]
	if !ok {
		return nil, "", store.ErrNotFound
	}
	cctx, cancel := h.clusterCtx(c)
	defer cancel()
	n, err := h.Kube.NodeExists(cctx, r, node)
	if err != nil {
		return nil, "", clusterError{err}
	}
	if n == nil {
		return nil, fmt.Sprintf("The cluster has no node %q.", node), nil
	}
	j, err = h.Kube.Enqueue(ctx(c), engine.Request{Kind: a.kind, Title: a.verb + " node " + node + " of " + r.Name,
		Subject: r.ID, Params: ops.NodeParams{Node: node, TimeoutSeconds: timeout}, CreatedBy: Who(c).User.Email})
	if err == nil {
		h.Log.Info("node action", "region", r.Name, "node", node, "action", action, "user", Who(c).User.Email)
	}
	return j, "", err
}

// NodeActionInput is the optional body of POST /api/knative-regions/{id}/nodes/{node}/drain.
type NodeActionInput struct {
	// TimeoutSeconds bounds the wait for the pods to leave (default: the install timeout).
	TimeoutSeconds int `json:"timeout_seconds"`
}

// APINodeAction is POST /api/knative-regions/{id}/nodes/{node}/{cordon|uncordon|drain}:
// 202 with the job; 404 for a node the cluster does not have.
func (h *Handlers) APINodeAction(action string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
		if err != nil {
			return h.Fail(c, err)
		}
		var in NodeActionInput
		if err := optionalBody(c, &in); err != nil {
			return h.Fail(c, err)
		}
		if in.TimeoutSeconds < 0 || in.TimeoutSeconds > 24*3600 {
			return Invalid(c, FieldErrors{"timeout_seconds": "Use 1 to 86400 seconds, or leave it out."})
		}
		j, missing, err := h.enqueueNodeAction(c, r, action, c.Params("node"), in.TimeoutSeconds)
		switch {
		case err != nil:
			return h.failChange(c, r, err)
		case missing != "":
			return JSONError(c, fiber.StatusNotFound, missing)
		}
		return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": j.ID})
	}
}

// deleteNode checks and queues the delete of a node: the check's Refused is a 422, its
// Warning goes with the answer.
func (h *Handlers) deleteNode(c *fiber.Ctx, r *store.Region, node string) (*store.Job, ops.NodeDeleteCheck, string, error) {
	cctx, cancel := h.clusterCtx(c)
	defer cancel()
	d, found, err := h.Kube.NodeDeletePreflight(cctx, r, node)
	if err != nil {
		return nil, d, "", clusterError{err}
	}
	if !found {
		return nil, d, fmt.Sprintf("The cluster has no node %q.", node), nil
	}
	if d.Refused != "" {
		return nil, d, "", nil
	}
	j, err := h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindNodeDelete, Title: "Delete node " + node + " from the cluster of " + r.Name,
		Subject: r.ID, Params: ops.NodeParams{Node: node}, CreatedBy: Who(c).User.Email})
	if err == nil {
		h.Log.Info("node delete", "region", r.Name, "node", node, "warning", d.Warning, "user", Who(c).User.Email)
	}
	return j, d, "", err
}

// APIDeleteNode is DELETE /api/knative-regions/{id}/nodes/{node}: 202 with the job (and a
// warning when an even number of control-plane nodes would remain); 422 for the last
// control-plane node.
func (h *Handlers) APIDeleteNode(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	j, d, missing, err := h.deleteNode(c, r, c.Params("node"))
	switch {
	case err != nil:
		return h.failChange(c, r, err)
	case missing != "":
		return JSONError(c, fiber.StatusNotFound, missing)
	case d.Refused != "":
		return Unprocessable(c, d.Refused)
	}
	out := fiber.Map{"job_id": j.ID}
	if d.Warning != "" {
		out["warning"] = d.Warning
	}
	return c.Status(fiber.StatusAccepted).JSON(out)
}

// APINodeDeletePreflight is GET /api/knative-regions/{id}/nodes/{node}/delete-preflight:
// what deleting the node would do (refused, or a warning), without deleting it.
func (h *Handlers) APINodeDeletePreflight(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	cctx, cancel := h.clusterCtx(c)
	defer cancel()
	d, found, err := h.Kube.NodeDeletePreflight(cctx, r, c.Params("node"))
	if err != nil {
		return h.clusterFailed(c, r, err)
	}
	if !found {
		return JSONError(c, fiber.StatusNotFound, fmt.Sprintf("The cluster has no node %q.", c.Params("node")))
	}
	return c.JSON(fiber.Map{"data": d})
}

// workersInvalid re-renders the Workers tab with a form's errors (422).
func (h *Handlers) workersInvalid(c *fiber.Ctx, r *store.Region, values map[string]string, errs FieldErrors, msg string) error {
	f := views.Form{Values: values, Errors: errs, Error: msg}
	if msg == "" && len(errs) > 0 {
		f.Error = "Some fields need another look."
	}
	c.Locals(workersFormKey, f)
	return h.formInvalid(c, r, "workers", values, errs, msg)
}

// WorkersForm saves the dedicated workers from the Workers tab.
func (h *Handlers) WorkersForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	var nodes []string
	for _, v := range c.Request().PostArgs().PeekMulti("nodes") {
		nodes = append(nodes, string(v))
	}
	if form, err := c.MultipartForm(); err == nil && len(nodes) == 0 {
		nodes = form.Value["nodes"]
	}
	_, fe, err := h.setWorkers(c, r, nodes)
	if err != nil {
		return h.failChange(c, r, err)
	}
	if fe != nil {
		return h.workersInvalid(c, r, map[string]string{"nodes": strings.Join(nodes, ",")}, fe, "")
	}
	msg := "The dedicated workers are being labelled and tainted."
	if len(nodes) == 0 {
		msg = "The dedicated workers are being cleared: projects run on every schedulable node."
	}
	return h.formDone(c, r, "workers", msg)
}

// OvercommitForm saves the FaaS overcommit factors from the Workers tab.
func (h *Handlers) OvercommitForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	vals := map[string]string{"faas_cpu_overcommit": strings.TrimSpace(c.FormValue("faas_cpu_overcommit")),
		"faas_memory_overcommit": strings.TrimSpace(c.FormValue("faas_memory_overcommit"))}
	var in OvercommitInput
	errs := FieldErrors{}
	for key, dst := range map[string]**float64{"faas_cpu_overcommit": &in.CPU, "faas_memory_overcommit": &in.Memory} {
		if vals[key] == "" {
			continue
		}
		v, err := strconv.ParseFloat(vals[key], 64)
		if err != nil {
			errs[key] = fmt.Sprintf("Use a number from %d to %d, e.g. 1.5.", ops.MinOvercommit, ops.MaxOvercommit)
			continue
		}
		*dst = &v
	}
	if len(errs) > 0 {
		return h.workersInvalid(c, r, vals, errs, "")
	}
	fe, err := h.setOvercommit(c, r, in)
	if err != nil {
		return h.Fail(c, err)
	}
	if fe != nil {
		return h.workersInvalid(c, r, vals, fe, "")
	}
	return h.formDone(c, r, "workers", "Overcommit factors saved; the next deploys are admitted with them.")
}

// NodeActionForm runs a node action from the Workers tab: cordon, uncordon, drain,
// delete, or undedicate (leave the dedicated workers).
func (h *Handlers) NodeActionForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	node, action := c.Params("node"), c.Params("action")
	switch action {
	case "delete":
		_, d, missing, err := h.deleteNode(c, r, node)
		switch {
		case err != nil:
			return h.failChange(c, r, err)
		case missing != "":
			return h.workersInvalid(c, r, nil, nil, missing)
		case d.Refused != "":
			return h.workersInvalid(c, r, nil, nil, d.Refused)
		}
		msg := "Node " + node + " is being drained and deleted."
		if d.Warning != "" {
			msg += " " + d.Warning
		}
		return h.formDone(c, r, "workers", msg)
	case "undedicate":
		_, msg, err := h.removeWorker(c, r, node)
		if err != nil {
			return h.Fail(c, err)
		}
		if msg != "" {
			return h.workersInvalid(c, r, nil, nil, msg)
		}
		return h.formDone(c, r, "workers", node+" is leaving the dedicated workers.")
	}
	if _, ok := nodeActions[action]; !ok {
		return h.Fail(c, store.ErrNotFound)
	}
	_, missing, err := h.enqueueNodeAction(c, r, action, node, 0)
	switch {
	case err != nil:
		return h.failChange(c, r, err)
	case missing != "":
		return h.workersInvalid(c, r, nil, nil, missing)
	}
	return h.formDone(c, r, "workers", nodeActions[action].verb+" of "+node+" started.")
}
