package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"runr.dev/console/config"
	"runr.dev/console/kube"
	"runr.dev/console/ops"
	"runr.dev/console/store"
	"runr.dev/console/web"
)

// serveCmd is `runr serve`: the console itself.
func serveCmd() *cobra.Command {
	var migrate bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the console (listens on RUNR_ADDR, default :8080)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), migrate)
		},
	}
	cmd.Flags().BoolVar(&migrate, "migrate", false, "apply pending migrations before serving")
	return cmd
}

// serve runs the console until SIGINT, SIGTERM or a listener's failure, then shuts it
// down: the listeners first, the background work (hub, job workers) last.
func serve(parent context.Context, migrate bool) error {
	ctx, stop := signal.NotifyContext(parent, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if path := os.Getenv("RUNR_CPU_PROFILE"); path != "" {
		stopProfile, err := startCPUProfile(path)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	cfg, st, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	log := newLogger(cfg.LogLevel)
	if err := ensureMigrated(ctx, st, migrate, log); err != nil {
		return err
	}
	if cfg.OwnClusterUID == "" {
		// The cluster the console runs in: its regions' agents use the in-cluster gateway.
		uid, err := kube.InClusterUID(ctx)
		if err != nil {
			log.Warn("the console cannot tell which cluster it runs in: regions on it are treated as other clusters", "err", err)
		}
		cfg.OwnClusterUID = uid
	}
	if cfg.OwnClusterUID != "" {
		log.Info("the console runs in a cluster", "kube_system_uid", cfg.OwnClusterUID, "gateway", cfg.GatewayURL)
	}
	for _, w := range cfg.Branding.Warnings() {
		log.Warn("branding", "warning", w)
	}
	svc := ops.NewService(st, cfg, log)
	srv := web.New(st, cfg, svc, log, config.Version)
	stopBackground := runInBackground(srv.Hub.Run, func(ctx context.Context) { svc.RunWorkers(ctx, cfg.Workers) }, svc.Status.RunBackground,
		svc.Billing.RunBackground)

	errc := make(chan error, 2)
	metrics := startMetrics(cfg.MetricsAddr, errc, log)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		stopBackground()
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	go func() { errc <- srv.Serve(ln) }()
	log.Info("runr console listening", "addr", cfg.Addr, "version", config.Version)
	select {
	case err = <-errc:
	case <-ctx.Done():
		log.Info("shutting down")
		drain(parent, srv, cfg.ShutdownDelay, log)
	}
	err = shutdownListeners(srv, metrics, err)
	stopBackground()
	// What the agents' sockets recorded last (connections that ended as the listener
	// closed) is written before the console exits.
	flushCtx, cancelFlush := context.WithTimeout(parent, 5*time.Second)
	svc.Observability.FlushAgentWrites(flushCtx, true)
	cancelFlush()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// drain keeps serving for delay with /readyz failing, so that the Service's endpoints and
// load balancers drop this console before its listener closes; a second SIGINT or SIGTERM
// ends the wait.
func drain(parent context.Context, srv *web.Server, delay time.Duration, log *slog.Logger) {
	if delay <= 0 {
		return
	}
	srv.H.Draining.Store(true)
	log.Info("draining: /readyz fails while requests are still served", "for", delay)
	again, stop := signal.NotifyContext(parent, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	select {
	case <-again.Done():
	case <-time.After(delay):
	}
}

// ensureMigrated applies the pending migrations when asked to, and otherwise refuses to
// serve while any is pending.
func ensureMigrated(ctx context.Context, st *store.Store, migrate bool, log *slog.Logger) error {
	if migrate {
		n, err := st.Migrate(ctx)
		if err != nil {
			return err
		}
		log.Info("migrations applied", "count", n)
		return nil
	}
	n, err := st.PendingMigrations(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%d migration(s) pending: run `runr migrate` first, or `runr serve --migrate`", n)
	}
	return nil
}

// runInBackground runs each task in a goroutine of its own; the function it returns
// cancels the tasks' context and waits for every task to return.
func runInBackground(tasks ...func(context.Context)) (stop func()) {
	bg, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, task := range tasks {
		wg.Go(func() { task(bg) })
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// startMetrics serves /metrics on its own listener, never on the console's port, when
// addr is set (it returns nil otherwise); the listener's failure goes to errc.
func startMetrics(addr string, errc chan<- error, log *slog.Logger) *http.Server {
	if addr == "" {
		return nil
	}
	metrics := &http.Server{Addr: addr, Handler: web.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := metrics.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("metrics listener: %w", err)
		}
	}()
	log.Info("metrics listening", "addr", addr)
	return metrics
}

// shutdownListeners stops the metrics listener (when there is one) and the console's,
// giving them 10 s together; it returns the error the console stopped on, or else the
// console's shutdown error.
func shutdownListeners(srv *web.Server, metrics *http.Server, err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if metrics != nil {
		_ = metrics.Shutdown(ctx)
	}
	if serr := srv.App.ShutdownWithContext(ctx); serr != nil && err == nil {
		err = serr
	}
	return err
}

// startCPUProfile writes a CPU profile of the whole process to path until the function it
// returns is called (RUNR_CPU_PROFILE: the benchmarks' profiles; never set in production).
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
