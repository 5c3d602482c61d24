package store

import (
	"context"
	"time"
)

// GPU support modes: NVIDIA's GPU operator (drivers, toolkit, device plugin and feature
// discovery), or the device plugin with GPU feature discovery on nodes whose drivers are
// installed already.
const (
	GPUModeOperator     = "operator"
	GPUModeDevicePlugin = "device-plugin"
)

// RegionGPU is a region's GPU support: what is installed, the GPUs last found, and the
// volume of model weights.
type RegionGPU struct {
	Mode    string          `json:"mode,omitempty"`
	Status  ComponentStatus `json:"status,omitempty"`
	Message string          `json:"message,omitempty"`
	// Total and Models are the GPUs found when the region was last looked at (model →
	// count), for the region list.
	Total     int            `json:"total"`
	Models    map[string]int `json:"models,omitempty"`
	CheckedAt *time.Time     `json:"checked_at,omitempty"`
	Storage   ModelStorage   `json:"model_storage"`
}

// State is the GPU support's status, not_installed until it has one.
func (g RegionGPU) State() ComponentStatus {
	return g.Status.orNotInstalled()
}

// ModelStorage is the volume of model weights in a region's project namespace.
type ModelStorage struct {
	StorageClass string          `json:"storage_class,omitempty"`
	SizeGi       int             `json:"size_gi,omitempty"`
	Status       ComponentStatus `json:"status,omitempty"`
	Message      string          `json:"message,omitempty"`
}

// ProjectGPU is what a project asks of GPUs: how many, optionally of one model, and
// whether it mounts the region's model storage (read-only).
type ProjectGPU struct {
	Count        int    `json:"count,omitempty"`
	Model        string `json:"model,omitempty"`
	ModelStorage bool   `json:"model_storage,omitempty"`
}

// SetRegionGPU records a region's GPU support.
func (s *Store) SetRegionGPU(ctx context.Context, id string, v RegionGPU) error {
	return s.updateRegion(ctx, "set region GPU", id, cols{{"gpu", JSON[RegionGPU]{V: v}}})
}
