package handlers

import (
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/redis"
)

// APICompatibleVersions is GET /api/knative-regions/{id}/compatible-versions.
func (h *Handlers) APICompatibleVersions(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	vs, err := h.Ops.Knative.RegionVersions(ctx(c), r)
	if err != nil {
		return JSONError(c, fiber.StatusBadGateway, h.Cause(c, "The Knative Operator chart repository could not be read", err))
	}
	if vs == nil {
		vs = []knative.Version{}
	}
	return c.JSON(fiber.Map{"data": vs, "kubernetes_version": r.K8sVersion})
}

// OptionalBody decodes a JSON object body when there is one.
func OptionalBody(c *fiber.Ctx, v any) error {
	if len(c.Body()) == 0 {
		return nil
	}
	return BodyMap(c, v)
}

// KnativeAction is the API handler of one Knative route: 202 with the job, or 422.
func (h *Handlers) KnativeAction(kind string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
		if err != nil {
			return h.Fail(c, err)
		}
		var in knative.Input
		if err := OptionalBody(c, &in); err != nil {
			return h.Fail(c, err)
		}
		j, err := h.Ops.Knative.Start(ctx(c), h.Actor(c), r, kind, in)
		return h.Accepted(c, j, err)
	}
}

// APISetRedis is POST /api/knative-regions/{id}/redis.
func (h *Handlers) APISetRedis(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	var in redis.RedisInput
	if err := BodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Ops.Redis.SetRedis(ctx(c), h.Actor(c), r, in)
	return h.Accepted(c, j, err)
}

// APIDeleteRedis is DELETE /api/knative-regions/{id}/redis.
func (h *Handlers) APIDeleteRedis(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Ops.Redis.RemoveRedis(ctx(c), h.Actor(c), r)
	return h.Accepted(c, j, err)
}

// APITestRedis is POST /api/knative-regions/{id}/test-redis: a PING from a pod.
func (h *Handlers) APITestRedis(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Ops.Redis.TestRedis(ctx(c), h.Actor(c), r)
	return h.Accepted(c, j, err)
}
