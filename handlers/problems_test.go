package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/config"
	"runr.dev/console/crypt"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// TestFailAnswersEveryProblemOnce: each kind of refusal has one status, the same for JSON
// clients, pages and forms, and its sentence reaches the user; an unexpected error is a
// 500 that does not show its text.
func TestFailAnswersEveryProblemOnce(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 6443},
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name   string
		err    error
		status int
		says   string // in the JSON error or the page
		fields map[string]string
		form   bool // Refusal hands it to the form
	}{
		{"invalid", fmt.Errorf("save: %w", &problem.Invalid{Fields: map[string]string{"name": "Give a name."}}), 422, "The request has invalid fields.", map[string]string{"name": "Give a name."}, true},
		{"invalid with a summary", &problem.Invalid{Fields: map[string]string{"cpu": "Only 1 CPU is free."}, Summary: "The quotas do not fit the region."}, 422, "The quotas do not fit the region.", map[string]string{"cpu": "Only 1 CPU is free."}, true},
		{"refused about a field", &problem.Refused{Field: "mode", Reason: "Not while a move runs."}, 422, "The request has invalid fields.", map[string]string{"mode": "Not while a move runs."}, true},
		{"refused", &problem.Refused{Reason: "Not while a move runs."}, 422, "Not while a move runs.", nil, true},
		{"missing", &problem.Missing{Reason: `The cluster has no node "n9".`}, 404, `The cluster has no node "n9".`, nil, true},
		{"unreachable", &problem.Unreachable{Region: "eu-1", Err: refused}, 502, "The cluster of region eu-1 did not answer: the connection was refused", nil, true},
		{"forbidden", &problem.Forbidden{Reason: "Only an owner may delete an owner."}, 403, "Only an owner may delete an owner.", nil, false},
		{"conflict", &problem.Conflict{Reason: "The kubeconfig of eu-1 cannot be read."}, 409, "The kubeconfig of eu-1 cannot be read.", nil, false},
		{"secrets unreadable", fmt.Errorf("open: %w", crypt.ErrUndecryptable), 409, "This cannot be saved now", nil, false},
		{"not found", fmt.Errorf("region 7: %w", store.ErrNotFound), 404, "Not found: this does not exist, or it was removed.", nil, false},
		{"unexpected", errors.New("pq: relation secret_table does not exist"), 500, "Something went wrong on our side", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Handlers{Cfg: &config.Config{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			app := fiber.New()
			var form FieldErrors
			var formMsg string
			var formOK bool
			fail := func(c *fiber.Ctx) error {
				form, formMsg, formOK = h.Refusal(c, tc.err)
				return h.Fail(c, tc.err)
			}
			app.Get("/api/x", fail)
			app.Get("/x", fail)

			res, err := app.Test(httptest.NewRequest("GET", "/api/x", nil))
			if err != nil {
				t.Fatal(err)
			}
			var body struct {
				Error  string            `json:"error"`
				Fields map[string]string `json:"fields"`
			}
			if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
				t.Fatalf("JSON answer: %v", err)
			}
			if res.StatusCode != tc.status || !strings.Contains(body.Error, tc.says) || fmt.Sprint(body.Fields) != fmt.Sprint(tc.fields) {
				t.Fatalf("JSON: %d %+v, want %d saying %q with fields %v", res.StatusCode, body, tc.status, tc.says, tc.fields)
			}
			if strings.Contains(body.Error, "10.1.2.3") || strings.Contains(body.Error, "secret_table") {
				t.Fatalf("the answer shows the error's detail: %q", body.Error)
			}
			if formOK != tc.form {
				t.Fatalf("Refusal hands it to the form: %v, want %v", formOK, tc.form)
			}
			if tc.form && (fmt.Sprint(map[string]string(form)) != fmt.Sprint(tc.fields) || (tc.fields == nil && formMsg == "")) {
				t.Fatalf("the form gets %v %q", form, formMsg)
			}

			res, err = app.Test(httptest.NewRequest("GET", "/x", nil))
			if err != nil {
				t.Fatal(err)
			}
			doc, err := goquery.NewDocumentFromReader(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			text := doc.Find("main").Text()
			if res.StatusCode != tc.status || (tc.fields == nil && !strings.Contains(text, tc.says)) {
				t.Fatalf("page: %d %q, want %d saying %q", res.StatusCode, text, tc.status, tc.says)
			}
		})
	}
}
