package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// aliasHandler sends <project>.<from> to <project>.<to> through the upstream (the
// region's Traefik): the proxy of a base-domain migration.
func aliasHandler(from, to string, upstream *url.URL) http.Handler {
	return &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(upstream)
		pr.SetXForwarded()
		host := pr.In.Host
		if h, _, ok := strings.Cut(host, ":"); ok {
			host = h
		}
		pr.Out.Host = pr.In.Host
		if strings.HasSuffix(host, "."+from) {
			pr.Out.Host = strings.TrimSuffix(host, "."+from) + "." + to
		}
		pr.Out.Header.Set("X-Forwarded-Host", host)
	}}
}

func domainAliasCmd() *cobra.Command {
	var from, to, upstream, addr string
	cmd := &cobra.Command{
		Use:   "domain-alias",
		Short: "The proxy of a base-domain migration (runs in the region): <project>.<from> → <project>.<to>",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || to == "" || upstream == "" {
				return errors.New("--from, --to and --upstream are required")
			}
			u, err := url.Parse(upstream)
			if err != nil {
				return fmt.Errorf("--upstream: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			srv := &http.Server{Addr: addr, Handler: aliasHandler(from, to, u), ReadHeaderTimeout: 10 * time.Second}
			go func() {
				<-ctx.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				srv.Shutdown(sctx)
			}()
			fmt.Fprintf(os.Stderr, "domain alias %s → %s via %s on %s\n", from, to, upstream, addr)
			if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the new domain, e.g. eu-2.new.example.com")
	cmd.Flags().StringVar(&to, "to", "", "the function domain, e.g. eu-2.old.example.com")
	cmd.Flags().StringVar(&upstream, "upstream", "", "the region's Traefik, e.g. http://traefik.knative-serving.svc")
	cmd.Flags().StringVar(&addr, "addr", ":8080", "listen address")
	return cmd
}
