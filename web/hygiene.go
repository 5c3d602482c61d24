package web

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
)

// cleanInput refuses, with a 422 before any handler runs, a request whose path, query,
// form fields or JSON body carry a NUL byte or invalid UTF-8: PostgreSQL cannot store
// them, and no field of the console has a use for them.
func (s *Server) cleanInput(c *fiber.Ctx) error {
	fields := handlers.FieldErrors{}
	if badText(c.Request().URI().Path()) {
		fields["path"] = "The address contains a NUL byte or invalid UTF-8."
	}
	c.Request().URI().QueryArgs().VisitAll(func(k, v []byte) {
		if badText(k) || badText(v) {
			fields[fieldName(k)] = "Contains a NUL byte or invalid UTF-8."
		}
	})
	if !safeMethod(c.Method()) {
		ct := strings.ToLower(c.Get(fiber.HeaderContentType))
		switch {
		case strings.HasPrefix(ct, fiber.MIMEApplicationForm):
			c.Request().PostArgs().VisitAll(func(k, v []byte) {
				if badText(k) || badText(v) {
					fields[fieldName(k)] = "Contains a NUL byte or invalid UTF-8."
				}
			})
		case strings.HasPrefix(ct, fiber.MIMEMultipartForm):
			if f, err := c.MultipartForm(); err == nil {
				for k, vs := range f.Value {
					for _, v := range vs {
						if badText([]byte(k)) || badText([]byte(v)) {
							fields[fieldName([]byte(k))] = "Contains a NUL byte or invalid UTF-8."
						}
					}
				}
			}
		default:
			if b := c.Body(); len(b) > 0 && (badText(b) || jsonNUL(b)) {
				fields["body"] = "The body contains a NUL character or invalid UTF-8."
			}
		}
	}
	if len(fields) == 0 {
		return c.Next()
	}
	if handlers.IsAPI(c) || c.Get(fiber.HeaderAccept) == fiber.MIMEApplicationJSON {
		return handlers.Invalid(c, fields)
	}
	if c.Method() == fiber.MethodPost && handlers.FormShowsInputErrors[c.Path()] {
		// These forms show the message beside the field: their handlers stop there,
		// before anything is read or stored (the checks of the route still run first).
		c.Locals(handlers.InputErrorsKey, fields)
		return c.Next()
	}
	msg := "The form has invalid characters:"
	for k, v := range fields {
		msg += " " + k + ": " + v
	}
	return fiber.NewError(fiber.StatusUnprocessableEntity, msg)
}

// badText reports a NUL byte or invalid UTF-8.
func badText(b []byte) bool { return bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) }

// fieldName is a field's name fit to be echoed in an error (printable, short).
func fieldName(k []byte) string {
	if badText(k) || len(k) > 64 {
		return "field"
	}
	return string(k)
}

// jsonNUL reports a \u0000 escape in a JSON text (one that is not itself an escaped backslash).
func jsonNUL(b []byte) bool {
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte(`\u0000`))
		if j < 0 {
			return false
		}
		at := i + j
		n := 0
		for k := at - 1; k >= 0 && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return true
		}
		i = at + 1
	}
}
