package handlers

import (
	"bytes"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/accounts"
	"runr.dev/console/ops"
	"runr.dev/console/ops/projects"
	"runr.dev/console/ops/registry"
	"runr.dev/console/store"
)

// FuzzBodyDecoders sends any body to the JSON decoders of the API's inputs: the answer
// is 200 (decoded) or a 422 with a field error, never a panic or a 500.
func FuzzBodyDecoders(f *testing.F) {
	app := fiber.New()
	decode := func(v func() any) fiber.Handler {
		return func(c *fiber.Ctx) error {
			if err := BodyMap(c, v()); err != nil {
				return Invalid(c, err.(FieldErrors))
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

// FuzzUnsealStep1: no input opens as another user's sealed state, expired or not, and
// nothing panics; a genuine state survives a round trip.
func FuzzUnsealStep1(f *testing.F) {
	c, err := store.NewCipher("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	if err != nil {
		f.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	good := SealStep1(c, "user-1", SealedStep1{Name: "eu-2"}, now)
	f.Add(good, "user-1")
	f.Add(good, "user-2")
	f.Add("enc:v1:AAAA", "user-1")
	f.Add("enc:v2:00000000:AAAA", "")
	f.Add("", "user-1")
	f.Fuzz(func(t *testing.T, sealed, user string) {
		v, err := UnsealStep1(c, user, sealed, now)
		// Only a state this test sealed (for user-1, with the key) may open.
		if err == nil && (user != "user-1" || v.Name != "eu-2") {
			t.Fatalf("%q opened for %q", sealed, user)
		}
		if _, err := UnsealStep1(c, user, sealed, now.Add(2*time.Hour)); err == nil {
			t.Fatal("an expired state opened")
		}
	})
}
