// Package apiclient is a client of the console's JSON API (the routes table,
// web/routes*.go): bearer-token requests, the API's errors with their field errors, and
// a job's event feed followed to its end. The `runr` CLI's region and job commands use it.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// Client calls one console with one token.
type Client struct {
	// URL is the console's base URL (https://runr.example.com).
	URL string
	// Token is an API token (runr_…), sent as Authorization: Bearer.
	Token string
	// HTTP is the client requests go through (http.DefaultClient when nil).
	HTTP *http.Client
	// UserAgent names the caller in the console's logs.
	UserAgent string
}

// New returns a client of the console at baseURL with a token.
func New(baseURL, token string) *Client {
	return &Client{URL: strings.TrimRight(baseURL, "/"), Token: token, HTTP: &http.Client{Timeout: 90 * time.Second}}
}

// Error is an answer of the API that is not a success: its status, its sentence and,
// for a 422, the message of each invalid field.
type Error struct {
	Status  int
	Method  string
	Path    string
	Message string
	Fields  map[string]string
}

// Error prints the sentence, then one line per invalid field (sorted by field name).
func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = fmt.Sprintf("%s %s answered %d %s", e.Method, e.Path, e.Status, http.StatusText(e.Status))
	}
	if len(e.Fields) == 0 {
		return msg
	}
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(msg)
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %s: %s", k, e.Fields[k])
	}
	return b.String()
}

// IsNotFound reports an answer 404.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// Do sends a request with a JSON body (in, when not nil) and decodes a JSON answer into
// out (when not nil). An answer of 400 or more is an *Error.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	raw, status, err := c.send(ctx, method, path, in)
	if err != nil {
		return err
	}
	if status >= 400 {
		return apiError(method, path, status, raw)
	}
	if out == nil || len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the JSON expected: %w", method, path, err)
	}
	return nil
}

// send sends one request and returns the answer's body and status.
func (c *Client) send(ctx context.Context, method, path string, in any) ([]byte, int, error) {
	if c.URL == "" {
		return nil, 0, errors.New("no console to talk to: run `runr login --url URL`, or set RUNR_URL and RUNR_TOKEN")
	}
	var body io.Reader
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return nil, 0, fmt.Errorf("%s %s: encode the request: %w", method, path, err)
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, body)
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w", method, c.URL+path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	return raw, resp.StatusCode, nil
}

// apiError reads the API's error body: {"error": "...", "fields": {...}}.
func apiError(method, path string, status int, raw []byte) error {
	var body struct {
		Error  string            `json:"error"`
		Fields map[string]string `json:"fields"`
	}
	_ = json.Unmarshal(raw, &body)
	e := &Error{Status: status, Method: method, Path: path, Message: body.Error, Fields: body.Fields}
	if e.Message == "" && status == http.StatusUnauthorized {
		e.Message = "The console refused the token (401): run `runr login` again, or check RUNR_TOKEN."
	}
	return e
}

// Me is GET /api/me: who the token belongs to and what it may do.
type Me struct {
	Email       string   `json:"email"`
	Name        string   `json:"name"`
	Role        string   `json:"role"`
	Token       bool     `json:"token"`
	Scopes      []string `json:"scopes"`
	Permissions []string `json:"permissions"`
}

// Me asks the console who the token is.
func (c *Client) Me(ctx context.Context) (*Me, error) {
	var out struct {
		Data Me `json:"data"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/me", nil, &out); err != nil {
		return nil, err
	}
	return &out.Data, nil
}

// PathEscape escapes one segment of a path.
func PathEscape(s string) string { return url.PathEscape(s) }
