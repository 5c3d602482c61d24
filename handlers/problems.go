package handlers

import (
	"errors"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/crypt"
	"runr.dev/console/kube"
	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// JSONError writes {"error": msg} with a status.
func JSONError(c *fiber.Ctx, status int, msg string) error {
	return c.Status(status).JSON(fiber.Map{"error": msg})
}

// FieldErrors are the messages beside a form's fields: field name → message.
type FieldErrors map[string]string

// String is the messages in one line, by field name.
func (f FieldErrors) String() string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + f[k]
	}
	return "invalid input: " + strings.Join(parts, "; ")
}

// invalidFields is the sentence above the field errors of a 422.
const invalidFields = "The request has invalid fields."

// Invalid writes a 422 with field errors.
func Invalid(c *fiber.Ctx, errs FieldErrors) error {
	return c.Status(fiber.StatusUnprocessableEntity).JSON(fiber.Map{"error": invalidFields, "fields": errs})
}

// Unprocessable writes a 422 with a reason (a refusal that is not about one field).
func Unprocessable(c *fiber.Ctx, msg string) error {
	return JSONError(c, fiber.StatusUnprocessableEntity, msg)
}

// answer is what the console answers for an error: a status, the sentence or the
// messages beside the fields, more facts for JSON clients, and the error page's title.
type answer struct {
	status  int
	title   string
	msg     string
	fields  FieldErrors
	details map[string]any
	// form marks a refusal a form shows beside its fields or above them (the others
	// answer with an error page).
	form bool
	// alarm is the log line of an error the operator must see ("": none; Fail logs it).
	alarm string
}

// answerOf is the one table from errors to answers: the problems of the use cases,
// the store's not-found and unreadable secrets. ok is false for an error nobody
// expected (a 500).
func (h *Handlers) answerOf(c *fiber.Ctx, err error) (a answer, ok bool) {
	var (
		inv *problem.Invalid
		rf  *problem.Refused
		ms  *problem.Missing
		un  *problem.Unreachable
		fb  *problem.Forbidden
		cf  *problem.Conflict
	)
	switch {
	case errors.As(err, &fb):
		return answer{status: fiber.StatusForbidden, title: "Not allowed", msg: fb.Reason}, true
	case errors.As(err, &inv):
		return answer{status: fiber.StatusUnprocessableEntity, title: "Invalid input", msg: inv.Summary, fields: FieldErrors(inv.Fields),
			details: inv.Details, form: true}, true
	case errors.As(err, &rf):
		msg := rf.Reason
		if rf.Err != nil {
			msg = h.Cause(c, rf.Reason, rf.Err)
		}
		a := answer{status: fiber.StatusUnprocessableEntity, title: "Invalid input", msg: msg, form: true}
		if rf.Field != "" {
			a.msg, a.fields = "", FieldErrors{rf.Field: msg}
		}
		return a, true
	case errors.As(err, &ms):
		return answer{status: fiber.StatusNotFound, title: "Not found", msg: ms.Reason, form: true}, true
	case errors.As(err, &un):
		what := "The cluster did not answer"
		if un.Region != "" {
			what = "The cluster of region " + un.Region + " did not answer"
		}
		return answer{status: fiber.StatusBadGateway, title: "Cluster unreachable", msg: h.Cause(c, what, un.Err), form: true}, true
	case errors.As(err, &cf):
		return answer{status: fiber.StatusConflict, title: "Conflict", msg: cf.Reason}, true
	case errors.Is(err, crypt.ErrUndecryptable):
		return answer{status: fiber.StatusConflict, title: "Secrets unreadable", alarm: "secrets cannot be decrypted",
			msg: "This cannot be saved now: " + store.SecretErrorText + " (request id " + requestID(c) + ")"}, true
	case errors.Is(err, store.ErrNotFound):
		return answer{status: fiber.StatusNotFound, title: "Not found", msg: "Not found: this does not exist, or it was removed."}, true
	}
	return answer{}, false
}

// Refusal splits a use case's refusal into what a form shows: the messages beside the
// fields (*problem.Invalid, or *problem.Refused about a field) or one message
// (*problem.Refused, *problem.Missing, *problem.Unreachable). ok is false for any other
// error: the handler answers it with Fail.
func (h *Handlers) Refusal(c *fiber.Ctx, err error) (fe FieldErrors, msg string, ok bool) {
	a, ok := h.answerOf(c, err)
	if !ok || !a.form {
		return nil, "", false
	}
	if a.fields != nil {
		return a.fields, "", true
	}
	return nil, a.msg, true
}

// Fail answers an error: a use case's problem or the store's not-found with its status
// (answerOf), in JSON to API clients and as an error page to browsers; anything else is
// logged and answered 500 without its detail.
func (h *Handlers) Fail(c *fiber.Ctx, err error) error {
	if errors.Is(err, store.ErrUnavailable) {
		return h.DatabaseUnavailable(c, err)
	}
	a, ok := h.answerOf(c, err)
	if !ok {
		a = answer{status: fiber.StatusInternalServerError, title: "Error", alarm: "request failed",
			msg: "Something went wrong on our side; the error is logged with request id " + requestID(c) + "."}
	}
	if a.alarm != "" {
		h.Log.Error(a.alarm, "path", c.Path(), "method", c.Method(), "request_id", requestID(c), "err", err)
	}
	switch {
	case IsAPI(c) && a.fields != nil:
		body := fiber.Map{"error": invalidFields, "fields": a.fields}
		if a.msg != "" {
			body["error"] = a.msg
		}
		for k, v := range a.details {
			body[k] = v
		}
		return c.Status(a.status).JSON(body)
	case IsAPI(c), isHTMX(c) && (a.status == fiber.StatusForbidden || a.status == fiber.StatusConflict):
		return JSONError(c, a.status, a.msg)
	}
	msg := a.msg
	if msg == "" {
		msg = a.fields.String()
	}
	return Render(c, a.status, views.ErrorPage(h.Page(c, a.title, ""), a.status, msg))
}

// databaseRetryAfter is the Retry-After of an answer given while the database is away.
const databaseRetryAfter = "5"

// DatabaseUnavailable answers a request the console cannot serve while its database is
// unreachable: 503 with Retry-After, in JSON or as a page that needs no database.
func (h *Handlers) DatabaseUnavailable(c *fiber.Ctx, err error) error {
	h.Log.Warn("database unavailable", "path", c.Path(), "method", c.Method(), "request_id", requestID(c), "err", err)
	c.Set(fiber.HeaderRetryAfter, databaseRetryAfter)
	msg := "The console's database cannot be reached: try again in a few seconds (request id " + requestID(c) + ")."
	if IsAPI(c) || isHTMX(c) || c.Get(fiber.HeaderAccept) == fiber.MIMEApplicationJSON {
		return JSONError(c, fiber.StatusServiceUnavailable, msg)
	}
	return Render(c, fiber.StatusServiceUnavailable, views.ErrorPage(views.Page{Title: "Unavailable", Brand: h.brand()}, 503, msg))
}

// Cause is what a user is told about an error of a cluster or a repository: a short
// cause and the request id; the full error (addresses, library messages) goes to the log.
func (h *Handlers) Cause(c *fiber.Ctx, what string, err error) string {
	h.Log.Warn(what, "path", c.Path(), "request_id", requestID(c), "err", err)
	return what + ": " + kube.Classify(err).Short() + " (request id " + requestID(c) + ")."
}
