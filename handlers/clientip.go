package handlers

import (
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/config"
)

// ClientIP is the address of the request's client: the connection's peer, or when the
// peer is a trusted proxy (RUNR_TRUSTED_PROXIES), the last address of X-Forwarded-For
// that is not one (a client can put anything in front; the proxies append).
func ClientIP(c *fiber.Ctx, cfg *config.Config) string {
	peer := c.Context().RemoteIP().String()
	a, err := netip.ParseAddr(peer)
	if err != nil || !cfg.TrustsProxy(a) {
		return peer
	}
	hops := strings.Split(strings.Join(c.GetReqHeaders()[fiber.HeaderXForwardedFor], ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // a malformed hop: what is left of it is the client's to say
		}
		if !cfg.TrustsProxy(hop) {
			return hop.Unmap().String()
		}
		peer = hop.Unmap().String()
	}
	return peer
}
