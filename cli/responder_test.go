package cli

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"runr.dev/console/ops/statusblock"
)

func TestResponder(t *testing.T) {
	h := responderHandler()
	for status, want := range map[string]int{"inactive": 404, "maintenance": 503} {
		req := httptest.NewRequest("GET", "https://shop.eu-2.example.com/", nil)
		req.Header.Set(statusblock.StatusHeader, status)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Fatalf("%s: %d, want %d", status, rec.Code, want)
		}
		if status == "maintenance" && rec.Header().Get("Retry-After") == "" {
			t.Fatal("maintenance needs Retry-After")
		}
	}
	_ = http.StatusOK
}
