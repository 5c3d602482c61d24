package handlers

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Healthz answers while the process runs.
func (h *Handlers) Healthz(c *fiber.Ctx) error { return c.SendString("ok") }

// Readyz answers 200 when the database answers and no migration is pending.
func (h *Handlers) Readyz(c *fiber.Ctx) error {
	if h.Draining.Load() {
		return JSONError(c, fiber.StatusServiceUnavailable, "shutting down")
	}
	cctx, cancel := context.WithTimeout(ctx(c), 2*time.Second)
	defer cancel()
	if err := h.Store.DB.PingContext(cctx); err != nil {
		return JSONError(c, fiber.StatusServiceUnavailable, "database unreachable")
	}
	n, err := h.Store.PendingMigrations(cctx)
	if err != nil || n > 0 {
		return JSONError(c, fiber.StatusServiceUnavailable, "migrations pending")
	}
	return c.JSON(fiber.Map{"status": "ready"})
}

// APIVersion is GET /api/version.
func (h *Handlers) APIVersion(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"version": h.Version})
}
