package workloads

import (
	"fmt"
	"runr.dev/console/problem"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// clusterFailed answers a cluster that did not answer a read: 502 with the reason.
func (h *Handlers) clusterFailed(c *fiber.Ctx, r *store.Region, err error) error {
	return h.Fail(c, &problem.Unreachable{Region: r.Name, Err: err})
}

// workersTab renders the Workers tab: nodes, cluster shape, preflight, dedicated
// workers, capacity and admission.
func (h *Handlers) workersTab(c *fiber.Ctx, r *store.Region) (templ.Component, error) {
	d := views.WorkersData{Region: handlers.RegionView(r), MinK8sMinor: h.Cfg.MinK8sMinor}
	if f, ok := c.Locals(handlers.TabFormKey).(views.Form); ok {
		d.Form = f
	}
	cctx, cancel := h.ClusterCtx(c)
	defer cancel()
	found, err := h.Ops.Nodes.Nodes(cctx, r)
	if err == nil {
		d.Nodes = nodesReport(found)
		var capa *nodes.CapacityReport
		if capa, err = h.Ops.Nodes.RegionCapacity(cctx, r, ""); err == nil {
			d.Capacity = capacityOf(capa)
		}
	}
	if err != nil {
		d.ClusterError = h.Cause(c, "The cluster did not answer", err)
	}
	if d.Job, err = h.TabJob(c, r, "workers", nodes.NodeKinds); err != nil {
		return nil, err
	}
	// The page's own data (flash, banners) is built by the region page; the tab needs
	// only who is asking, for its forms.
	return views.WorkersTab(handlers.TabPage(c), d), nil
}

// APINodes is GET /api/knative-regions/{id}/nodes: every node with its roles, heartbeat,
// resources and preflight, and the warnings about the cluster's shape.
func (h *Handlers) APINodes(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	cctx, cancel := h.ClusterCtx(c)
	defer cancel()
	rep, err := h.Ops.Nodes.Nodes(cctx, r)
	if err != nil {
		return h.clusterFailed(c, r, err)
	}
	return c.JSON(fiber.Map{"data": rep.Nodes, "control_planes": rep.ControlPlanes, "warnings": rep.Warnings,
		"dedicated_workers": rep.DedicatedWorkers, "checked_at": rep.CheckedAt, "upgrades": rep.Upgrades})
}

// APICapacity is GET /api/knative-regions/{id}/capacity: the region capacity and its
// always-on and FaaS budgets.
func (h *Handlers) APICapacity(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	cctx, cancel := h.ClusterCtx(c)
	defer cancel()
	rep, err := h.Ops.Nodes.RegionCapacity(cctx, r, "")
	if err != nil {
		return h.clusterFailed(c, r, err)
	}
	return c.JSON(fiber.Map{"data": rep})
}

// APISetWorkers is PUT /api/knative-regions/{id}/workers with {"nodes": [...]}: 202 with
// the job that applies the selection; 422 for a node the cluster does not have.
func (h *Handlers) APISetWorkers(c *fiber.Ctx) error {
	return handlers.RegionJobAPI(h.Handlers, c, h.Ops.Nodes.SetWorkers)
}

// APIRemoveWorker is DELETE /api/knative-regions/{id}/workers/{node}: the node leaves the
// dedicated workers (its label and taint are removed); 202 with the job.
func (h *Handlers) APIRemoveWorker(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Ops.Nodes.RemoveWorker(c.UserContext(), h.Actor(c), r, c.Params("node"))
	return h.Accepted(c, j, err)
}

// APISetOvercommit is PUT /api/knative-regions/{id}/overcommit; 422 outside 1–10.
func (h *Handlers) APISetOvercommit(c *fiber.Ctx) error {
	r, in, err := handlers.RegionBody[nodes.OvercommitInput](h.Handlers, c)
	if err != nil {
		return h.Fail(c, err)
	}
	if err := h.Ops.Nodes.SetOvercommit(c.UserContext(), h.Actor(c), r, in); err != nil {
		return h.Fail(c, err)
	}
	r, err = h.Store.RegionByID(c.UserContext(), r.ID)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(fiber.Map{"data": fiber.Map{"faas_cpu_overcommit": r.FaaSCPUOvercommit, "faas_memory_overcommit": r.FaaSMemoryOvercommit}})
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
		r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
		if err != nil {
			return h.Fail(c, err)
		}
		var in NodeActionInput
		if err := handlers.OptionalBody(c, &in); err != nil {
			return h.Fail(c, err)
		}
		j, err := h.Ops.Nodes.NodeAction(c.UserContext(), h.Actor(c), r, action, c.Params("node"), in.TimeoutSeconds)
		return h.Accepted(c, j, err)
	}
}

// APIDeleteNode is DELETE /api/knative-regions/{id}/nodes/{node}: 202 with the job (and a
// warning when an even number of control-plane nodes would remain); 422 for the last
// control-plane node.
func (h *Handlers) APIDeleteNode(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	j, d, err := h.Ops.Nodes.DeleteNode(c.UserContext(), h.Actor(c), r, c.Params("node"))
	if err != nil {
		return h.Fail(c, err)
	}
	out := fiber.Map{"job_id": j.ID}
	if d.Warning != "" {
		out["warning"] = d.Warning
	}
	return c.Status(fiber.StatusAccepted).JSON(out)
}

// APIProbeNodes is POST /api/knative-regions/{id}/nodes-probe: the node probe on every
// node (202 with the job).
func (h *Handlers) APIProbeNodes(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.Nodes.ProbeNodes)
}

// ProbeNodesForm runs the node probe from the Workers tab.
func (h *Handlers) ProbeNodesForm(c *fiber.Ctx) error {
	return handlers.RegionFormAction(h.Handlers, c, "workers", "", h.Ops.Nodes.ProbeNodes)
}

// APINodeDeletePreflight is GET /api/knative-regions/{id}/nodes/{node}/delete-preflight:
// what deleting the node would do (refused, or a warning), without deleting it.
func (h *Handlers) APINodeDeletePreflight(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	cctx, cancel := h.ClusterCtx(c)
	defer cancel()
	d, found, err := h.Ops.Nodes.NodeDeletePreflight(cctx, r, c.Params("node"))
	if err != nil {
		return h.clusterFailed(c, r, err)
	}
	if !found {
		return h.Fail(c, &problem.Missing{Reason: fmt.Sprintf("The cluster has no node %q.", c.Params("node"))})
	}
	return c.JSON(fiber.Map{"data": d})
}

// WorkersForm saves the dedicated workers from the Workers tab.
func (h *Handlers) WorkersForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	selected := []string{}
	for _, v := range c.Request().PostArgs().PeekMulti("nodes") {
		selected = append(selected, string(v))
	}
	if form, err := c.MultipartForm(); err == nil && len(selected) == 0 {
		selected = form.Value["nodes"]
	}
	confirm := c.FormValue("confirm_below_floor") == "true"
	_, err = h.Ops.Nodes.SetWorkers(c.UserContext(), h.Actor(c), r, nodes.WorkersInput{Nodes: &selected, ConfirmBelowFloor: confirm})
	msg := "The dedicated workers are being labelled and tainted."
	if len(selected) == 0 {
		msg = "The dedicated workers are being cleared: projects run on every schedulable node."
	}
	return h.FormOutcome(c, r, "workers", map[string]string{"nodes": strings.Join(selected, ",")}, err, msg)
}

// OvercommitForm saves the FaaS overcommit factors from the Workers tab.
func (h *Handlers) OvercommitForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	vals := map[string]string{"faas_cpu_overcommit": strings.TrimSpace(c.FormValue("faas_cpu_overcommit")),
		"faas_memory_overcommit": strings.TrimSpace(c.FormValue("faas_memory_overcommit"))}
	var in nodes.OvercommitInput
	errs := handlers.FieldErrors{}
	for key, dst := range map[string]**float64{"faas_cpu_overcommit": &in.CPU, "faas_memory_overcommit": &in.Memory} {
		if vals[key] == "" {
			continue
		}
		v, err := strconv.ParseFloat(vals[key], 64)
		if err != nil {
			errs[key] = fmt.Sprintf("Use a number from %d to %d, e.g. 1.5.", nodes.MinOvercommit, nodes.MaxOvercommit)
			continue
		}
		*dst = &v
	}
	if len(errs) > 0 {
		return h.FormInvalid(c, r, "workers", vals, errs, "")
	}
	err = h.Ops.Nodes.SetOvercommit(c.UserContext(), h.Actor(c), r, in)
	return h.FormOutcome(c, r, "workers", vals, err, "Overcommit factors saved; the next deploys are admitted with them.")
}

// NodeActionForm runs a node action from the Workers tab: cordon, uncordon, drain,
// delete, or undedicate (leave the dedicated workers).
func (h *Handlers) NodeActionForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	node, action := c.Params("node"), c.Params("action")
	switch action {
	case "delete":
		_, d, err := h.Ops.Nodes.DeleteNode(c.UserContext(), h.Actor(c), r, node)
		msg := "Node " + node + " is being drained and deleted."
		if d.Warning != "" {
			msg += " " + d.Warning
		}
		return h.FormOutcome(c, r, "workers", nil, err, msg)
	case "undedicate":
		_, err := h.Ops.Nodes.RemoveWorker(c.UserContext(), h.Actor(c), r, node)
		return h.FormOutcome(c, r, "workers", nil, err, node+" is leaving the dedicated workers.")
	}
	a, ok := nodes.NodeActions[action]
	if !ok {
		return h.Fail(c, store.ErrNotFound)
	}
	_, err = h.Ops.Nodes.NodeAction(c.UserContext(), h.Actor(c), r, action, node, 0)
	return h.FormOutcome(c, r, "workers", nil, err, a.Verb+" of "+node+" started.")
}

// APIUpgradeKubernetes is POST /api/knative-regions/{id}/kubernetes-upgrade: a k3s or rke2
// cluster upgraded node by node (202 with the job; 422 naming why the version is refused).
func (h *Handlers) APIUpgradeKubernetes(c *fiber.Ctx) error {
	return handlers.RegionJobAPI(h.Handlers, c, h.Ops.Nodes.UpgradeKubernetes)
}

// UpgradeKubernetesForm starts the node-by-node upgrade from the Workers tab.
func (h *Handlers) UpgradeKubernetesForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	vals := map[string]string{"version": strings.TrimSpace(c.FormValue("version"))}
	_, err = h.Ops.Nodes.UpgradeKubernetes(c.UserContext(), h.Actor(c), r, nodes.UpgradeInput{Version: vals["version"]})
	return h.FormOutcome(c, r, "workers", vals, err, "The upgrade to "+vals["version"]+" started: the nodes are upgraded one at a time.")
}
