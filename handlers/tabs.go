package handlers

import (
	"time"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/store"
)

// initTabs registers the region tabs rendered by later features' handlers.
func (h *Handlers) initTabs() {
	h.extraTabs = map[string]func(c *fiber.Ctx, r *store.Region) (templ.Component, error){}
}

// AddTab registers the region tab name, rendered by a feature's handlers.
func (h *Handlers) AddTab(name string, render func(c *fiber.Ctx, r *store.Region) (templ.Component, error)) {
	h.extraTabs[name] = render
}

// Init prepares the handlers after construction.
func (h *Handlers) Init() {
	h.initTabs()
	h.bannerCache.ttl = time.Second
}
