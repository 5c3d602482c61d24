package web

import (
	"context"
	"encoding/json"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/websocket/v2"

	"runr.dev/console/agent"
	"runr.dev/console/handlers"
	"runr.dev/console/store"
)

// internalHosts decides which hosts /api/internal/* answers for: the console's own, and
// the hosts of every address RunR hands out (the gateway, RUNR_AGENT_WS_URL, every
// region's agent_ws_url, refreshed within a minute). Any other host gets 400.
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
		for _, u := range []string{cfg.AppURL, cfg.AgentWSURL, cfg.GatewayURL} {
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

func (s *Server) internalOnly(c *fiber.Ctx) error {
	host := c.Hostname()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if !s.internal.allowed(c.UserContext(), strings.Trim(host, "[]")) {
		return handlers.JSONError(c, fiber.StatusBadRequest, "This address does not answer the internal API.")
	}
	return c.Next()
}

// agentAuth checks the agent's token: the region it belongs to, or 401.
func (s *Server) agentAuth(c *fiber.Ctx) error {
	tok, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if !ok || tok == "" {
		return unauthorized(c, "The agent must send its region's token.")
	}
	r, err := s.Store.RegionByAgentToken(c.UserContext(), tok)
	if err != nil {
		s.Log.Warn("agent refused: unknown token", "ip", c.IP())
		return unauthorized(c, "The agent's token belongs to no region (was the region removed?).")
	}
	c.Locals("region_id", r.ID)
	c.Locals("region_name", r.Name)
	return c.Next()
}

// AgentSocket receives an agent's reports: it stores snapshots (not for regions that
// are not active), pod sessions and events, and keeps the agent's last-seen time.
func (s *Server) AgentSocket() fiber.Handler {
	return wsUpgrade(websocket.New(func(conn *websocket.Conn) {
		id, _ := conn.Locals("region_id").(string)
		name, _ := conn.Locals("region_name").(string)
		log := s.Log.With("region", name)
		ctx := context.Background()
		seen := func(status string) {
			now := time.Now().UTC()
			if err := s.Store.SetRegion(ctx, id, map[string]any{"agent_last_seen_at": now}); err != nil {
				log.Warn("agent: last seen", "err", err)
			}
			if status != "" {
				if err := s.Store.SetComponent(ctx, id, "agent", store.ComponentState{Status: status}); err != nil {
					log.Warn("agent: state", "err", err)
				}
			}
		}
		seen("connected")
		log.Info("agent connected")
		defer func() {
			seen("disconnected")
			log.Info("agent disconnected")
		}()
		conn.SetReadLimit(AgentReadLimit)
		_ = conn.SetReadDeadline(time.Now().Add(90 * time.Second))
		conn.SetPingHandler(func(data string) error {
			_ = conn.SetReadDeadline(time.Now().Add(90 * time.Second))
			return conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(5*time.Second))
		})
		last := time.Now()
		for {
			_, raw, err := conn.ReadMessage()
			if err != nil {
				return
			}
			_ = conn.SetReadDeadline(time.Now().Add(90 * time.Second))
			var m agent.Message
			if err := json.Unmarshal(raw, &m); err != nil {
				log.Warn("agent: bad message", "err", err)
				continue
			}
			if err := s.storeAgentMessage(ctx, id, m); err != nil {
				log.Warn("agent: store", "type", m.Type, "err", err)
			}
			if time.Since(last) > 10*time.Second {
				seen("")
				last = time.Now()
			}
		}
	}))
}

func (s *Server) storeAgentMessage(ctx context.Context, regionID string, m agent.Message) error {
	at := m.At
	if at.IsZero() {
		at = time.Now().UTC()
	}
	switch m.Type {
	case "snapshot":
		if m.Snapshot == nil {
			return nil
		}
		r, err := s.Store.RegionByID(ctx, regionID)
		if err != nil {
			return err
		}
		if r.Status != "active" {
			return nil // a region that is not active is left out of the snapshots
		}
		raw, err := json.Marshal(m.Snapshot)
		if err != nil {
			return err
		}
		return s.Store.AddSnapshot(ctx, regionID, at, raw)
	case "pod":
		return s.Store.AddPodSession(ctx, regionID, m.Namespace, m.Pod, m.Event, m.Restarts, at)
	case "event":
		return s.Store.AddKubeEvent(ctx, regionID, m.Namespace, m.Object, m.Kind, m.Reason, m.Message, at)
	}
	return nil
}
