package lifecycle

import (
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/knative"
)

// APICompatibleVersions is GET /api/knative-regions/{id}/compatible-versions.
func (h *Handlers) APICompatibleVersions(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	vs, err := h.Ops.Knative.RegionVersions(c.UserContext(), r)
	if err != nil {
		return handlers.JSONError(c, fiber.StatusBadGateway, h.Cause(c, "The Knative Operator chart repository could not be read", err))
	}
	if vs == nil {
		vs = []knative.Version{}
	}
	return c.JSON(fiber.Map{"data": vs, "kubernetes_version": r.K8sVersion})
}

// KnativeAction is the API handler of one Knative route: 202 with the job, or 422.
func (h *Handlers) KnativeAction(kind string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
		if err != nil {
			return h.Fail(c, err)
		}
		var in knative.Input
		if err := handlers.OptionalBody(c, &in); err != nil {
			return h.Fail(c, err)
		}
		j, err := h.Ops.Knative.Start(c.UserContext(), h.Actor(c), r, kind, in)
		return h.Accepted(c, j, err)
	}
}

// APISetRedis is POST /api/knative-regions/{id}/redis.
func (h *Handlers) APISetRedis(c *fiber.Ctx) error {
	return handlers.RegionJobAPI(h.Handlers, c, h.Ops.Redis.SetRedis)
}

// APIDeleteRedis is DELETE /api/knative-regions/{id}/redis.
func (h *Handlers) APIDeleteRedis(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.Redis.RemoveRedis)
}

// APISetTracing is PUT /api/observability/regions/{id}/tracing: the region's tracing mode.
func (h *Handlers) APISetTracing(c *fiber.Ctx) error {
	return handlers.RegionJobAPI(h.Handlers, c, h.Ops.Observability.SetTracing)
}

// APIRemoveTracing is DELETE /api/observability/regions/{id}/tracing: tracing off, the
// backend removed unless another region of the cluster uses it.
func (h *Handlers) APIRemoveTracing(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.Observability.RemoveTracing)
}

// APITestRedis is POST /api/knative-regions/{id}/test-redis: a PING from a pod.
func (h *Handlers) APITestRedis(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.Redis.TestRedis)
}
