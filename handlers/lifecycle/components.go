package lifecycle

// This file: the region's registry (with containerd's rolling restart) and its Redis
// (forms and API).

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/redis"
	"runr.dev/console/ops/registry"
	"runr.dev/console/store"
)

// RegistryForm sets up the registry (on a PVC when internal).
func (h *Handlers) RegistryForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	in := registry.Input{RegistryMode: store.RegistryMode(c.FormValue("registry_mode")), StorageType: "pvc", ExternalAddress: c.FormValue("external_address"),
		ExternalUsername: c.FormValue("external_username"), ExternalPassword: c.FormValue("external_password"),
		PVCConfig: registry.PVCConfig{StorageClass: c.FormValue("storage_class"), Size: c.FormValue("size")}}
	vals := map[string]string{"storage_class": in.PVCConfig.StorageClass, "size": in.PVCConfig.Size, "external_address": in.ExternalAddress, "external_username": in.ExternalUsername}
	_, err = h.Ops.Registry.Set(c.UserContext(), h.Actor(c), r, in)
	return h.FormOutcome(c, r, "registry", vals, err, "")
}

// RegistryDeleteForm removes the registry.
func (h *Handlers) RegistryDeleteForm(c *fiber.Ctx) error {
	return handlers.RegionFormAction(h.Handlers, c, "registry", "", h.Ops.Registry.Remove)
}

// APISetRegistry is POST /api/knative-regions/{id}/registry: set up (or replace) the registry.
func (h *Handlers) APISetRegistry(c *fiber.Ctx) error {
	return handlers.RegionJobAPI(h.Handlers, c, h.Ops.Registry.Set)
}

// APIDeleteRegistry is DELETE /api/knative-regions/{id}/registry.
func (h *Handlers) APIDeleteRegistry(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.Registry.Remove)
}

// APITestRegistry is POST /api/knative-regions/{id}/test-registry: the storage test or
// the external registry test, from the cluster, without installing anything.
func (h *Handlers) APITestRegistry(c *fiber.Ctx) error {
	return handlers.RegionJobAPI(h.Handlers, c, h.Ops.Registry.Test)
}

// APIRollingRestart is POST /api/knative-regions/{id}/registry/rolling-restart: containerd
// restarts node by node (the spec's registry:rolling-restart).
func (h *Handlers) APIRollingRestart(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Ops.Registry.StartRollingRestart(c.UserContext(), h.Actor(c), r)
	return h.Accepted(c, j, err)
}

// RollingRestartForm is the Registry tab's Restart containerd.
func (h *Handlers) RollingRestartForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	_, err = h.Ops.Registry.StartRollingRestart(c.UserContext(), h.Actor(c), r)
	return h.FormOutcome(c, r, "registry", nil, err, "")
}

// RedisForm sets the region's Redis.
func (h *Handlers) RedisForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	in := redis.Input{Mode: store.RedisMode(c.FormValue("mode")), Address: strings.TrimSpace(c.FormValue("address")), Password: c.FormValue("password")}
	_, err = h.Ops.Redis.SetRedis(c.UserContext(), h.Actor(c), r, in)
	return h.FormOutcome(c, r, "redis", map[string]string{"mode": string(in.Mode), "address": in.Address}, err, "")
}

// RedisActionForm tests or removes the Redis.
func (h *Handlers) RedisActionForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	switch c.Params("action") {
	case "test":
		_, err = h.Ops.Redis.TestRedis(c.UserContext(), h.Actor(c), r)
	case "delete":
		_, err = h.Ops.Redis.RemoveRedis(c.UserContext(), h.Actor(c), r)
	default:
		return h.Fail(c, store.ErrNotFound)
	}
	return h.FormOutcome(c, r, "redis", nil, err, "")
}

// APISetRedis is POST /api/knative-regions/{id}/redis.
func (h *Handlers) APISetRedis(c *fiber.Ctx) error {
	return handlers.RegionJobAPI(h.Handlers, c, h.Ops.Redis.SetRedis)
}

// APIDeleteRedis is DELETE /api/knative-regions/{id}/redis.
func (h *Handlers) APIDeleteRedis(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.Redis.RemoveRedis)
}

// APITestRedis is POST /api/knative-regions/{id}/test-redis: a PING from a pod.
func (h *Handlers) APITestRedis(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.Redis.TestRedis)
}
