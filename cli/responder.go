package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"runr.dev/console/ops/statusblock"
)

// responderHandler answers for a region that is not active: 404 when it is inactive,
// 503 with Retry-After when it is in maintenance. Traefik's Middleware of the region's
// block names the status in a request header.
func responderHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		switch r.Header.Get(statusblock.StatusHeader) {
		case "maintenance":
			w.Header().Set("Retry-After", "300")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "This region is in maintenance. Please try again in a few minutes.")
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintln(w, "This region is not active.")
		}
	})
	return mux
}

func responderCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "responder",
		Short: "The status responder of regions that are not active (runs in the region)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			srv := &http.Server{Addr: addr, Handler: responderHandler(), ReadHeaderTimeout: 10 * time.Second}
			go func() {
				<-ctx.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				srv.Shutdown(sctx)
			}()
			fmt.Fprintln(os.Stderr, "responder listening on", addr)
			if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", ":8080", "listen address")
	return cmd
}
