package web

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/store"
)

// internalHosts decides which hosts /api/internal/* answers for: the console's own, and
// the hosts of every address RunR hands out (the gateway, RUNR_AGENT_WS_URL, the replay
// ingest URL, WORKFLOWS_PUBLIC_API_URL, every region's agent_ws_url, refreshed within a
// minute). Any other host gets 400.
type internalHosts struct {
	s       *Server
	mu      sync.Mutex
	hosts   map[string]bool
	fetched time.Time
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

func (ih *internalHosts) allowed(ctx context.Context, host string) bool {
	ih.mu.Lock()
	defer ih.mu.Unlock()
	if ih.hosts == nil || time.Since(ih.fetched) > time.Minute {
		cfg := ih.s.Cfg
		hosts := map[string]bool{}
		for _, u := range []string{cfg.AppURL, cfg.AgentWSURL, cfg.GatewayURL, cfg.ReplayIngestURL, cfg.WorkflowsPublicAPIURL} {
			if h := hostOf(u); h != "" {
				hosts[h] = true
			}
		}
		if cfg.AppURL == "" {
			// Without a public URL the console answers on its loopback addresses.
			hosts["localhost"], hosts["127.0.0.1"], hosts["::1"] = true, true, true
		}
		if urls, err := ih.s.Store.AgentHosts(ctx); err == nil {
			for _, u := range urls {
				if h := hostOf(u); h != "" {
					hosts[h] = true
				}
			}
		}
		ih.hosts, ih.fetched = hosts, time.Now()
	}
	return ih.hosts[strings.ToLower(host)]
}

// requestHost is the request's host name, without port or brackets, in lower case.
func requestHost(c *fiber.Ctx) string {
	host := c.Hostname()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.Trim(host, "[]"))
}

func (s *Server) internalOnly(c *fiber.Ctx) error {
	if !s.internal.allowed(c.UserContext(), requestHost(c)) {
		return handlers.JSONError(c, fiber.StatusBadRequest, "This address does not answer the internal API.")
	}
	return c.Next()
}

// consoleHostOnly lets the API (but /api/internal/) answer only for the console's host,
// RUNR_APP_URL's, and for loopback (a port-forward, the pod itself); without
// RUNR_APP_URL it answers for any host. Any other host gets 400.
func (s *Server) consoleHostOnly(c *fiber.Ctx) error {
	if strings.HasPrefix(c.Path(), "/api/internal/") || s.Cfg.AppURL == "" {
		return c.Next()
	}
	host := requestHost(c)
	if ip := net.ParseIP(host); host == hostOf(s.Cfg.AppURL) || host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return c.Next()
	}
	return handlers.JSONError(c, fiber.StatusBadRequest, "The API answers at "+s.Cfg.AppURL+", not at this address.")
}

// agentAuth checks the agent's token: the regions of its cluster, or 401 once no region
// of its cluster is left.
func (s *Server) agentAuth(c *fiber.Ctx) error {
	tok, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if !ok || tok == "" {
		return unauthorized(c, "The agent must send its cluster's token.")
	}
	rs, err := s.Store.RegionsByAgentToken(c.UserContext(), tok)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		// The agent tries again later: a busy or unreachable database is no wrong token.
		s.Log.Warn("agent: the token could not be checked", "ip", handlers.ClientIP(c, s.Cfg), "err", err)
		c.Set(fiber.HeaderRetryAfter, "5")
		return handlers.JSONError(c, fiber.StatusServiceUnavailable, "The console cannot check the agent's token now; try again shortly.")
	}
	if err != nil {
		s.Log.Warn("agent refused: unknown token", "ip", handlers.ClientIP(c, s.Cfg))
		return unauthorized(c, "The agent's token belongs to no region (were its cluster's regions removed?).")
	}
	c.Locals(handlers.AgentRegionsKey, rs)
	c.Locals(handlers.AgentTokenKey, tok)
	return c.Next()
}
