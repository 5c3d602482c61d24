package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Flow 1: a wrong password shows an error and keeps the e-mail; the right one shows
// the regions list.
func TestLogin(t *testing.T) {
	c := startConsole(t)
	b := newBrowser(t, c.URL)

	// Anonymous visitors land on the sign-in page.
	b.open("/regions", "[data-testid=login-form]")
	if p := b.path(); p != "/login" {
		t.Fatalf("an anonymous visitor must be sent to /login, got %s", p)
	}
	if got := b.attr("#f-email", "autocomplete"); got != "username" {
		t.Fatalf("the e-mail field's autocomplete: %q", got)
	}
	var focused string
	b.eval(`document.activeElement.id`, &focused)
	if focused != "f-email" {
		t.Fatalf("the sign-in page must focus the e-mail field, focus is on %q", focused)
	}
	b.checkFeel("login")

	b.typeInto("#f-email", ownerEmail)
	b.typeInto("#f-password", "not the password")
	b.click("[data-testid=login-form] button[type=submit]")
	b.visible("[data-testid=form-error]", shortWait)
	if got := b.text("[data-testid=form-error]"); !strings.Contains(got, "e-mail or the password is wrong") {
		t.Fatalf("wrong password: error %q", got)
	}
	if got := b.value("#f-email"); got != ownerEmail {
		t.Fatalf("the e-mail must be kept after a failed sign-in, got %q", got)
	}
	if got := b.value("#f-password"); got != "" {
		t.Fatalf("the password must not be sent back, got %q", got)
	}
	b.eval(`document.activeElement.id`, &focused)
	if focused != "f-password" {
		t.Fatalf("after a failed sign-in the password field must have the focus, it is on %q", focused)
	}
	if b.count("[data-testid=regions-table], [data-testid=empty-state]") != 0 {
		t.Fatal("a wrong password must not show the regions")
	}

	// An empty field is named beside the field.
	b.do(shortWait, "clear", chromedp.Clear(chromedp.CSS("#f-password")))
	b.click("[data-testid=login-form] button[type=submit]")
	b.waitJS("the password's error", `document.querySelector("[data-testid=error-password]")`, shortWait)
	var described string
	b.eval(`document.getElementById("f-password").getAttribute("aria-describedby") || ""`, &described)
	if described != "err-password" {
		t.Fatalf("the password field must point at its error (aria-describedby), got %q", described)
	}

	b.login(ownerEmail, ownerPassword)
	if got := b.text("h1"); got != "Knative Regions" {
		t.Fatalf("after sign-in: heading %q", got)
	}
	b.visible("[data-testid=empty-state]", shortWait)
	if b.count("[data-testid=add-region]") == 0 {
		t.Fatal("an owner must see Add Region")
	}
	if got := b.text("[data-testid=account-menu]"); !strings.Contains(got, ownerEmail) {
		t.Fatalf("the account menu must name the user, got %q", got)
	}
	b.checkFeel("regions-empty")

	// The owner's other pages: users and API tokens.
	b.open("/users", "[data-testid=user-row]")
	if n := b.count("[data-testid=user-row]"); n != 2 {
		t.Fatalf("users: %d rows", n)
	}
	b.checkFeel("users")
	b.open("/tokens", "[data-testid=create-token]")
	b.checkFeel("tokens")
	// A new token has no scope chosen for it and expires after 90 days unless told
	// otherwise; the list says when each token stops working, and the token shown once
	// has a Copy button.
	if n := b.count(`[data-testid=create-token] [name=scopes]:checked`); n != 0 {
		t.Fatalf("the token form preselects %d scope(s), want none", n)
	}
	if v := b.value("#f-expires_in_days"); v != "90" {
		t.Fatalf("the token form's default lifetime: %q, want 90 days", v)
	}
	b.fill("#f-name", "ci-e2e", "#f-expires_in_days", "30")
	b.choose(`[data-testid=create-token] [name=scopes][value="regions.view"]`)
	b.submit(`[data-testid=create-token] button[type=submit]`)
	b.visible("[data-testid=new-token]", shortWait)
	if got := b.text("[data-testid=token-expires]"); !strings.HasPrefix(got, "in 29 days") && !strings.HasPrefix(got, "in 30 days") {
		t.Fatalf("the new token expires %q, want in 30 days", got)
	}
	b.click("[data-testid=copy-token]")
	b.waitFor("the Copy button to say what it did", func() bool { return b.text("[data-testid=copy-token]") != "Copy" }, shortWait)

	b.open("/regions", "h1")
	b.shot("final")
}
