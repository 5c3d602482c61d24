package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"runr.dev/console/ops"
	"runr.dev/console/web"
)

func serveCmd() *cobra.Command {
	var migrate bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the console (listens on RUNR_ADDR, default :8080)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			cfg, st, err := openStore(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			log := newLogger(cfg.LogLevel)
			if migrate {
				n, err := st.Migrate(ctx)
				if err != nil {
					return err
				}
				log.Info("migrations applied", "count", n)
			} else {
				n, err := st.PendingMigrations(ctx)
				if err != nil {
					return err
				}
				if n > 0 {
					return fmt.Errorf("%d migration(s) pending: run `runr migrate` first, or `runr serve --migrate`", n)
				}
			}
			svc := ops.NewService(st, cfg, log)
			srv := web.New(st, cfg, svc, log, version)

			bg, cancelBG := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			start := func(f func(context.Context)) {
				wg.Add(1)
				go func() { defer wg.Done(); f(bg) }()
			}
			start(srv.Hub.Run)
			start(func(ctx context.Context) { svc.RunWorkers(ctx, cfg.Workers) })
			start(svc.RunBackground)

			errc := make(chan error, 2)
			var metrics *http.Server
			if cfg.MetricsAddr != "" {
				// /metrics on its own listener, never on the console's port.
				metrics = &http.Server{Addr: cfg.MetricsAddr, Handler: web.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second}
				go func() {
					if err := metrics.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
						errc <- fmt.Errorf("metrics listener: %w", err)
					}
				}()
				log.Info("metrics listening", "addr", cfg.MetricsAddr)
			}
			go func() { errc <- srv.App.Listen(cfg.Addr) }()
			log.Info("runr console listening", "addr", cfg.Addr, "version", version)
			select {
			case err = <-errc:
			case <-ctx.Done():
				log.Info("shutting down")
			}
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if metrics != nil {
				_ = metrics.Shutdown(sctx)
			}
			if serr := srv.App.ShutdownWithContext(sctx); serr != nil && err == nil {
				err = serr
			}
			cancelBG()
			wg.Wait()
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&migrate, "migrate", false, "apply pending migrations before serving")
	return cmd
}
