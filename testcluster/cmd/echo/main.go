// Command echo is the harness's test program on real nodes (image EchoImage): an HTTP
// server on :8080 that answers what it received, and, from inside the cluster, fetches a
// URL or resolves a name for the test, so that a test sees the pod network as a pod does.
//
//	GET /anything           {"host": ..., "path": ..., "headers": {...}}
//	GET /fetch?url=URL      {"status": 200, "body": "..."} (with the pod's service account token for the API)
//	GET /resolve?name=NAME  {"addrs": [...]} or {"error": "..."}
//	GET /sleep?for=130s     {"slept": "2m10s"} after that long
package main

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	addr := ":8080"
	if len(os.Args) > 1 {
		addr = os.Args[1]
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	http.HandleFunc("/fetch", func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequest(http.MethodGet, r.URL.Query().Get("url"), nil)
		if err != nil {
			reply(w, map[string]any{"error": err.Error()})
			return
		}
		if strings.Contains(req.URL.Host, "kubernetes") || strings.HasPrefix(req.URL.Host, "10.0.0.1") {
			if tok, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/token"); err == nil {
				req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			reply(w, map[string]any{"error": err.Error()})
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		reply(w, map[string]any{"status": resp.StatusCode, "body": string(body), "headers": resp.Header})
	})
	http.HandleFunc("/resolve", func(w http.ResponseWriter, r *http.Request) {
		addrs, err := net.LookupHost(r.URL.Query().Get("name"))
		if err != nil {
			reply(w, map[string]any{"error": err.Error()})
			return
		}
		reply(w, map[string]any{"addrs": addrs})
	})
	http.HandleFunc("/sleep", func(w http.ResponseWriter, r *http.Request) {
		d, err := time.ParseDuration(r.URL.Query().Get("for"))
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			reply(w, map[string]any{"error": err.Error()})
			return
		}
		time.Sleep(d)
		reply(w, map[string]any{"slept": d.String()})
	})
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"host": r.Host, "path": r.URL.Path, "headers": r.Header})
	})
	// As PID 1 of its container, a signal without a handler is ignored: end on SIGTERM.
	go func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		<-sigs
		os.Exit(0)
	}()
	srv := &http.Server{Addr: addr, ReadHeaderTimeout: 10 * time.Second}
	os.Stderr.WriteString("echo listening on " + addr + "\n")
	if err := srv.ListenAndServe(); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
}
