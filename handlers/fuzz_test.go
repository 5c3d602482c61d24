package handlers

import (
	"bytes"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/accounts"
	"runr.dev/console/ops"
	"runr.dev/console/ops/projects"
	"runr.dev/console/ops/registry"
	"runr.dev/console/problem"
)

// FuzzBodyDecoders sends any body to the JSON decoders of the API's inputs: the answer
// is 200 (decoded) or a 422 with a field error, never a panic or a 500.
func FuzzBodyDecoders(f *testing.F) {
	app := fiber.New()
	decode := func(v func() any) fiber.Handler {
		return func(c *fiber.Ctx) error {
			if err := BodyMap(c, v()); err != nil {
				return Invalid(c, FieldErrors(err.(*problem.Invalid).Fields))
			}
			return c.SendStatus(200)
		}
	}
	inputs := map[string]func() any{
		"user": func() any { return &accounts.UserInput{} }, "token": func() any { return &accounts.TokenInput{} },
		"setup": func() any { return &ops.SetupInput{} }, "region": func() any { return &ops.RegionInput{} },
		"registry": func() any { return &registry.Input{} }, "check": func() any { return &ops.CheckInput{} },
		"project": func() any { return &projects.ProjectInput{} },
	}
	for name, v := range inputs {
		app.Post("/"+name, decode(v))
	}
	for _, s := range []string{`{"email":"a@b.c","role":"owner"}`, `{"scopes":"*"}`, `{"nodes":[1,2]}`, `[[[[[[]]]]]]`,
		`{"request_timeout":-99999999999999999999}`, `{"name":"\u0000"}`, "\xff\xfe", `{"pvc_config":{"size":{}}}`} {
		f.Add("user", []byte(s))
		f.Add("region", []byte(s))
	}
	f.Fuzz(func(t *testing.T, which string, body []byte) {
		if _, ok := inputs[which]; !ok {
			which = "setup"
		}
		req := httptest.NewRequest("POST", "/"+which, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 && resp.StatusCode != 422 {
			t.Fatalf("status %d for %q", resp.StatusCode, body)
		}
	})
}
