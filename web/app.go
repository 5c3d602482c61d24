// Package web is the console's HTTP side: the Fiber app, the routes table, the
// middleware (sessions, CSRF, authentication, permissions, request logging) and the
// WebSocket hub.
package web

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	gojson "github.com/goccy/go-json"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/filesystem"
	"github.com/gofiber/fiber/v2/middleware/helmet"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/gofiber/fiber/v2/middleware/requestid"
	"github.com/gofiber/fiber/v2/utils"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"runr.dev/console/changecache"
	"runr.dev/console/config"
	"runr.dev/console/handlers"
	"runr.dev/console/handlers/billing"
	"runr.dev/console/handlers/jobs"
	"runr.dev/console/handlers/lifecycle"
	"runr.dev/console/handlers/people"
	"runr.dev/console/handlers/regions"
	"runr.dev/console/handlers/runtimes"
	"runr.dev/console/handlers/workloads"
	"runr.dev/console/hub"
	"runr.dev/console/ops"
	"runr.dev/console/static"
	"runr.dev/console/store"
)

// BodyLimit is the largest request body accepted (kubeconfigs and certificates fit easily).
const BodyLimit = 2 << 20

// Server is the console's web side.
type Server struct {
	App      *fiber.App
	Store    *store.Store
	Cfg      *config.Config
	Sessions *scs.SessionManager
	Hub      *hub.Hub
	H        *handlers.Handlers
	// Runtimes are the handlers of sandboxes, GPU support and the supply chain.
	Runtimes *runtimes.Handlers
	// Workloads are the handlers of projects, data services, nodes and workers.
	Workloads *workloads.Handlers
	// Billing are the handlers of the Billing module.
	Billing *billing.Handlers
	// People are the handlers of users, tokens, accounts and tenants.
	People *people.Handlers
	// Lifecycle are the handlers of the wizard, setup, a region's components (registry,
	// Knative, Redis, tracing), moves, reconcile and platform settings.
	Lifecycle *lifecycle.Handlers
	// Regions are the handlers of a region's General tab (settings, status, function TLS,
	// monitoring), its status check and its removal.
	Regions *regions.Handlers
	// Jobs are the handlers of the jobs list, a job's page and its retry and cancel.
	Jobs     *jobs.Handlers
	Log      *slog.Logger
	internal *internalHosts
	// creds keeps sessions, tokens and users until they change (credcache.go).
	creds *changecache.Cache
}

// noStore keeps the console's answers out of every cache (a browser's, a proxy's): its
// pages and answers carry kubeconfigs, new tokens, generated passwords and the state of
// regions. The static files keep their own caching.
func noStore(c *fiber.Ctx) error {
	if !strings.HasPrefix(c.Path(), "/static/") {
		c.Set(fiber.HeaderCacheControl, "no-store")
	}
	return c.Next()
}

var httpRequests = promauto.NewCounterVec(prometheus.CounterOpts{
	Name: "runr_http_requests_total", Help: "HTTP requests by route and status.",
}, []string{"method", "route", "status"})

var httpDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
	Name: "runr_http_request_duration_seconds", Help: "HTTP request duration by route.",
	Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
}, []string{"route"})

// ContentSecurityPolicy allows the console's own scripts only (no inline script, no
// eval: htmx runs with allowEval off), inline styles (the progress bars' widths), and
// no framing by any other page.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; " +
	"form-action 'self'; frame-ancestors 'none'"

// MetricsHandler serves the Prometheus metrics. It is not a route of the console: `runr
// serve` serves it on RUNR_METRICS_ADDR alone (a separate listener, e.g. 127.0.0.1:9090,
// for the scraper), so the console's own port never exposes it.
func MetricsHandler() http.Handler { return promhttp.Handler() }

// New builds the Fiber app with every route.
func New(st *store.Store, cfg *config.Config, svc *ops.Service, log *slog.Logger, version string) *Server {
	sm := NewSessions(st)
	creds := &changecache.Cache{Max: credCacheMax}
	sm.Codec = &decodedSessions{next: sm.Codec}
	sm.Store = &cachedSessions{next: sm.Store, cache: creds, codec: sm.Codec}
	events := hub.New(st, log)
	h := &handlers.Handlers{Store: st, Cfg: cfg, Sessions: sm, Ops: svc, Hub: events, Version: version, Log: log}
	h.Init()
	events.WatchLists(h.ListWatcher())
	events.WatchRegionPages(h.RegionPagesWatcher())
	events.WatchLists(creds)
	s := &Server{Store: st, Cfg: cfg, Sessions: sm, Hub: events, H: h, Runtimes: runtimes.New(h), Workloads: workloads.New(h), People: people.New(h), Lifecycle: lifecycle.New(h), Regions: regions.New(h), Jobs: jobs.New(h), Billing: billing.New(h), Log: log, creds: creds}
	s.internal = &internalHosts{s: s}
	s.App = fiber.New(fiber.Config{
		AppName:               "runr-console",
		BodyLimit:             BodyLimit,
		DisableStartupMessage: true,
		// A connection's request (the first included: an idle connection that sends
		// nothing) has 15 s to arrive; a kept-alive connection waits 2 minutes for the next.
		ReadTimeout:  15 * time.Second,
		WriteTimeout: 60 * time.Second,
		IdleTimeout:  120 * time.Second,
		ErrorHandler: s.errorHandler,
		JSONEncoder:  gojson.Marshal, // as encoding/json, faster on the region lists
		// Fiber reuses the buffers of a request's strings (method, path, params, query,
		// headers) for the next request. Immutable copies them, so that a value kept
		// beyond the request (a metric label, a job parameter, a cache key) stays right.
		Immutable: true,
		// X-Forwarded-Host and -Proto are believed from the configured proxies only
		// (c.Hostname, c.Protocol); the client's address is handlers.ClientIP.
		EnableTrustedProxyCheck: true,
		TrustedProxies:          proxyRanges(cfg),
	})
	s.App.Use(recover.New(recover.Config{EnableStackTrace: true}))
	s.App.Use(requestid.New())
	s.App.Use(helmet.New(helmet.Config{
		ContentSecurityPolicy: ContentSecurityPolicy,
		XFrameOptions:         "DENY",
		ReferrerPolicy:        "same-origin",
		HSTSMaxAge:            365 * 24 * 3600, // sent on requests that arrived over TLS
		XSSProtection:         "0",
	}))
	s.App.Use(s.logRequests)
	s.App.Use(noStore)
	// Fiber's filesystem middleware strips only a plain route prefix: mounted as GET
	// /static/* it looks the whole path up, which static.FS answers.
	s.App.Get("/static/*", filesystem.New(filesystem.Config{Root: http.FS(static.FS()), PathPrefix: "", MaxAge: 3600}))
	s.App.Use(s.cleanInput)
	s.App.Use(s.listChanges)
	s.App.Use("/api/internal", s.internalOnly)
	s.App.Use("/api", s.consoleHostOnly)
	for _, r := range s.Routes() {
		if r.Public {
			s.App.Add(r.Method, r.Path, r.Handler)
			continue
		}
		if r.Agent {
			s.App.Add(r.Method, r.Path, s.agentAuth, r.Handler)
			continue
		}
		chain := []fiber.Handler{s.identify, s.sessionPrincipal, s.authorize(r), s.walls}
		if access, ok := RegionAccessOf(r); ok && s.Cfg.Tenancy {
			chain = append(chain, s.regionGate(access))
		}
		s.App.Add(r.Method, r.Path, append(chain, r.Handler)...)
	}
	s.App.Use(func(c *fiber.Ctx) error {
		if handlers.IsAPI(c) {
			return handlers.JSONError(c, fiber.StatusNotFound, "No such route: "+c.Method()+" "+c.Path())
		}
		return fiber.ErrNotFound
	})
	return s
}

// listChanges drops the cached region lists once a request that may have changed
// something (any method but GET and HEAD) has run, so that its client's next list is
// fresh without waiting for the database's notification.
func (s *Server) listChanges(c *fiber.Ctx) error {
	err := c.Next()
	if !safeMethod(c.Method()) {
		s.H.ChangedLocally()
		s.creds.ChangedLocally()
	}
	return err
}

// authorize refuses anonymous requests (401 for the API, the login page for browsers)
// and requests without the route's permission (403).
func (s *Server) authorize(r Route) fiber.Handler {
	return func(c *fiber.Ctx) error {
		p := handlers.Who(c)
		if r.Perm == Anonymous {
			if err := s.checkCSRF(c); err != nil {
				return err
			}
			return c.Next()
		}
		if p == nil {
			if handlers.IsAPI(c) || r.WebSocket {
				return unauthorized(c, "Authentication required: send Authorization: Bearer <token>, or sign in.")
			}
			if c.Get("HX-Request") == "true" {
				c.Set("HX-Redirect", "/login")
				return c.SendStatus(fiber.StatusUnauthorized)
			}
			return c.Redirect("/login", fiber.StatusSeeOther)
		}
		missing := ""
		need := append([]string{r.Perm}, r.Also...)
		if p.TokenID != "" && r.TokenPerm != "" {
			need = append(need, r.TokenPerm)
		}
		for _, perm := range need {
			if perm != Authenticated && !p.Can(perm) {
				missing = perm
				break
			}
		}
		if missing != "" {
			msg := "You need the permission " + missing + " for this; your role is " + p.User.Role + "."
			if handlers.IsAPI(c) || r.WebSocket || c.Get("HX-Request") == "true" {
				return handlers.JSONError(c, fiber.StatusForbidden, msg)
			}
			return fiber.NewError(fiber.StatusForbidden, msg)
		}
		if err := s.checkCSRF(c); err != nil {
			return err
		}
		return c.Next()
	}
}

func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	var fe *fiber.Error
	if !errors.As(err, &fe) {
		return s.H.Fail(c, err)
	}
	code, msg := fe.Code, fe.Message
	switch code {
	case fiber.StatusNotFound:
		msg = "This page does not exist."
	case fiber.StatusRequestEntityTooLarge:
		msg = "The request body is too large (at most 2 MiB)."
	}
	if handlers.IsAPI(c) || c.Get("Accept") == "application/json" {
		return handlers.JSONError(c, code, msg)
	}
	return s.H.ErrorPage(c, code, msg)
}

func (s *Server) logRequests(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	if err != nil {
		if herr := s.App.ErrorHandler(c, err); herr != nil {
			c.Status(fiber.StatusInternalServerError)
		}
	}
	status := c.Response().StatusCode()
	route := "unmatched"
	if r := c.Route(); r != nil && r.Path != "/" || c.Path() == "/" {
		route = c.Route().Path
	}
	d := time.Since(start)
	// Label values outlive the request: copies, never Fiber's buffers.
	method, route := utils.CopyString(c.Method()), utils.CopyString(route)
	httpRequests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	httpDuration.WithLabelValues(route).Observe(d.Seconds())
	lvl := slog.LevelDebug
	if status >= 500 {
		lvl = slog.LevelError
	} else if c.Method() != fiber.MethodGet {
		lvl = slog.LevelInfo
	}
	s.Log.Log(c.UserContext(), lvl, "request", "method", c.Method(), "path", c.Path(), "status", status,
		"duration_ms", d.Milliseconds(), "request_id", c.Locals("requestid"), "ip", handlers.ClientIP(c, s.Cfg))
	return nil
}

// proxyRanges are the trusted proxies as Fiber reads them.
func proxyRanges(cfg *config.Config) []string {
	var out []string
	for _, p := range cfg.TrustedProxies {
		out = append(out, p.String())
	}
	return out
}

// Serve answers on ln within the connection limits (RUNR_MAX_CONNECTIONS,
// RUNR_MAX_CONNECTIONS_PER_ADDRESS) until the app shuts down; running out of file
// descriptors makes it wait, never return.
func (s *Server) Serve(ln net.Listener) error {
	total, perAddress := s.Cfg.MaxConnections, s.Cfg.MaxConnectionsPerAddress
	if total == 0 {
		total = DefaultMaxConnections()
	}
	if perAddress == 0 {
		perAddress = DefaultConnectionsPerAddress
	}
	return s.App.Listener(newLimitedListener(ln, total, perAddress, s.Cfg.TrustsProxy, s.Log))
}
