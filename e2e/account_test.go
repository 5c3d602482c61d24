package e2e

import (
	"strings"
	"testing"
)

// Flow: the account menu leads to the Account page; a wrong current password is named
// beside its field and changes nothing; the right one changes the password, signs out
// the user's other browser and keeps this one; "Sign out other sessions" asks first,
// then signs out the other browser again (issue 30, finding 10).
func TestAccountPasswordAndSessions(t *testing.T) {
	c := startConsole(t)
	a := newBrowser(t, c.URL)
	other := newBrowser(t, c.URL)
	a.login(viewerEmail, viewerPass)
	other.login(viewerEmail, viewerPass)

	a.click("[data-testid=account-menu]")
	a.submit("[data-testid=account-link]")
	if p := a.path(); p != "/account" {
		a.fatalf("the account menu's Account link leads to %s", p)
	}
	if got := a.text("[data-testid=account-email]"); got != viewerEmail {
		a.fatalf("the Account page names %q", got)
	}
	a.checkFeel("account")

	const fresh = "a brand new passphrase"
	a.typeInto("#f-current_password", "not the password")
	a.typeInto("#f-new_password", fresh)
	a.typeInto("#f-confirm_password", fresh)
	a.submit("[data-testid=change-password] button[type=submit]")
	a.visible("[data-testid=error-current_password]", shortWait)
	if got := a.attr("#f-current_password", "aria-describedby"); got != "err-current_password" {
		a.fatalf("the current password's field must point at its error, got %q", got)
	}
	if got := a.value("#f-new_password"); got != "" {
		a.fatalf("a password must not be sent back, got %q", got)
	}
	other.open("/regions", "h1")
	if p := other.path(); p != "/regions" {
		other.fatalf("a refused change signed the other browser out (%s)", p)
	}

	a.typeInto("#f-current_password", viewerPass)
	a.typeInto("#f-new_password", fresh)
	a.typeInto("#f-confirm_password", fresh)
	a.submit("[data-testid=change-password] button[type=submit]")
	a.visible("[data-testid=flash]", shortWait)
	if got := a.text("[data-testid=flash]"); !strings.Contains(got, "Password changed") {
		a.fatalf("after the change: %q", got)
	}
	other.open("/regions", "[data-testid=login-form]")
	if p := other.path(); p != "/login" {
		other.fatalf("after the password change the other browser must be signed out, it is on %s", p)
	}
	a.open("/regions", "h1")
	if p := a.path(); p != "/regions" {
		a.fatalf("the browser that changed the password was signed out (%s)", p)
	}

	other.login(viewerEmail, fresh)
	a.open("/account", "[data-testid=end-other-sessions]")
	asked := len(a.dialogsSeen())
	a.submit("[data-testid=end-other-sessions] button[type=submit]")
	seen := a.dialogsSeen()
	if len(seen) <= asked || !strings.Contains(seen[len(seen)-1], "Sign out every other browser") {
		a.fatalf("signing out other sessions must ask first: %q", seen)
	}
	a.visible("[data-testid=flash]", shortWait)
	other.open("/regions", "[data-testid=login-form]")
	if p := other.path(); p != "/login" {
		other.fatalf("after Sign out other sessions the other browser must be signed out, it is on %s", p)
	}
	a.open("/regions", "h1")
	if p := a.path(); p != "/regions" {
		a.fatalf("the browser that signed out the others was signed out (%s)", p)
	}
	a.shot("final")
}
