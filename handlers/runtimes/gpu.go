package runtimes

import (
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/gpu"
	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// gpuModeTitles say what each way of installing GPU support does.
var gpuModeTitles = map[string]string{
	store.GPUModeOperator:     "NVIDIA GPU operator: installs the drivers, the container toolkit, the device plugin and GPU feature discovery",
	store.GPUModeDevicePlugin: "Device plugin with GPU feature discovery: the nodes' drivers and NVIDIA container runtime are installed already",
}

// gpuTab is the GPU tab: the GPU nodes, GPU support and the model storage.
func (h *Handlers) gpuTab(c *fiber.Ctx, r *store.Region) (templ.Component, error) {
	g := r.GPU.V
	d := views.GPUData{RegionID: r.ID, Status: string(g.State()), Mode: g.Mode, Message: g.Message,
		Installed: g.Status == store.ComponentReady, Installable: g.State() == store.ComponentNotInstalled || g.Status == store.ComponentError,
		Storage: views.ModelStorageView{Set: g.Storage.Status != "", Status: string(g.Storage.Status), Message: g.Storage.Message, StorageClass: g.Storage.StorageClass,
			SizeGi: max(g.Storage.SizeGi, 50), Claim: gpu.ModelStorageClaim, Path: gpu.ModelStoragePath}}
	if f, ok := c.Locals(handlers.TabFormKey).(views.Form); ok {
		d.Form = f
	}
	for _, m := range gpu.GPUModes {
		d.Modes = append(d.Modes, views.Option{Value: m, Label: gpuModeTitles[m], Selected: m == g.Mode || g.Mode == "" && m == store.GPUModeOperator})
	}
	cctx, cancel := h.ClusterCtx(c)
	defer cancel()
	rep, err := h.Ops.GPU.RegionGPUs(cctx, r)
	if err != nil {
		d.ClusterError = h.Cause(c, "The cluster did not answer", err)
	} else {
		d.Total, d.Free, d.Models = rep.Total, rep.Free, handlers.GPUText(store.RegionGPU{Total: rep.Total, Models: rep.Models})
		for _, n := range rep.Nodes {
			d.Nodes = append(d.Nodes, views.GPUNodeView{Name: n.Name, Hardware: n.Hardware, Allocatable: n.Allocatable,
				Requested: n.Requested, Product: n.Product, MemoryMiB: n.MemoryMiB})
		}
		// Without the list the form offers the cluster's default only.
		names, _ := h.Ops.RegionStorageClasses(cctx, r)
		d.StorageClasses = handlers.OptionsOf(names, g.Storage.StorageClass)
	}
	if d.Busy, err = h.JobRunning(c, r.ID, gpu.GPUKinds); err != nil {
		return nil, err
	}
	return views.GPUTab(handlers.TabPage(c), d), nil
}

// GPUInstallForm installs GPU support from the GPU tab.
func (h *Handlers) GPUInstallForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	_, err = h.Ops.GPU.InstallGPU(c.UserContext(), h.Actor(c), r, gpu.Params{Mode: c.FormValue("mode")})
	return h.FormOutcome(c, r, "gpu", nil, err, "")
}

// GPUUninstallForm removes GPU support from the GPU tab.
func (h *Handlers) GPUUninstallForm(c *fiber.Ctx) error {
	return handlers.RegionFormAction(h.Handlers, c, "gpu", "", h.Ops.GPU.UninstallGPU)
}

// ModelStorageForm sets the model storage volume from the GPU tab.
func (h *Handlers) ModelStorageForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	values := map[string]string{"size_gi": strings.TrimSpace(c.FormValue("size_gi")), "storage_class": c.FormValue("storage_class")}
	size, err := strconv.Atoi(values["size_gi"])
	if err != nil {
		return h.FormInvalid(c, r, "gpu", values, handlers.FieldErrors{"size_gi": "Use a whole number of GiB."}, "")
	}
	_, err = h.Ops.GPU.SetModelStorage(c.UserContext(), h.Actor(c), r, gpu.ModelStorageParams{StorageClass: values["storage_class"], SizeGi: size})
	return h.FormOutcome(c, r, "gpu", values, err, "")
}

// APIGPU is GET /api/knative-regions/{id}/gpu: the GPU nodes with their evidence, the
// totals and models, GPU support and the model storage.
func (h *Handlers) APIGPU(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	cctx, cancel := h.ClusterCtx(c)
	defer cancel()
	rep, err := h.Ops.GPU.RegionGPUs(cctx, r)
	if err != nil {
		return h.Fail(c, &problem.Unreachable{Region: r.Name, Err: err})
	}
	g := r.GPU.V
	return c.JSON(fiber.Map{"nodes": rep.Nodes, "total": rep.Total, "free": rep.Free, "models": rep.Models,
		"status": g.State(), "mode": g.Mode, "message": g.Message, "model_storage": g.Storage})
}

// APIInstallGPU is POST /api/knative-regions/{id}/gpu/install {"mode"}.
func (h *Handlers) APIInstallGPU(c *fiber.Ctx) error {
	return handlers.RegionJobAPI(h.Handlers, c, h.Ops.GPU.InstallGPU)
}

// APIUninstallGPU is POST /api/knative-regions/{id}/gpu/uninstall: refused (422, naming
// them) while pods request GPUs.
func (h *Handlers) APIUninstallGPU(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.GPU.UninstallGPU)
}

// APISetModelStorage is PUT /api/knative-regions/{id}/gpu/model-storage {"storage_class", "size_gi"}.
func (h *Handlers) APISetModelStorage(c *fiber.Ctx) error {
	return handlers.RegionJobAPI(h.Handlers, c, h.Ops.GPU.SetModelStorage)
}
