package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Timeouts of the browser's actions: a page or a click, and the long waits of installs.
const (
	shortWait   = 15 * time.Second
	installWait = 4 * time.Minute
)

// browser is one headless Chromium with a fresh profile, driving one tab.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	// accept is the answer to the next confirm dialogs.
	accept atomic.Bool

	// close ends the browser (it is also closed when the test ends).
	close func()

	mu         sync.Mutex
	dialogs    []string
	exceptions []string
	errors     []string
}

// newBrowser starts Chromium for a test at 1280 px wide; it only talks to 127.0.0.1.
func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		// Names never resolve: the console is addressed as 127.0.0.1.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	b := &browser{t: t, ctx: ctx, base: base}
	b.accept.Store(true)
	b.close = func() {
		cancel()
		cancelAlloc()
	}
	t.Cleanup(b.close)
	// The first action starts the browser; it has no timeout, the browser lives with ctx.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	// Confirm dialogs (data-confirm): record the question, answer it.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, ev.Message)
			b.mu.Unlock()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: b.accept.Load()})
		}
	}()
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			b.mu.Lock()
			switch {
			case m.IsException():
				b.exceptions = append(b.exceptions, m.String())
			case m.Type == chromedp.ConsoleError:
				b.errors = append(b.errors, m.String())
			}
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errors {
			t.Logf("browser console: %s", e)
		}
		if len(b.exceptions) > 0 {
			t.Errorf("uncaught JavaScript exceptions:\n%s", strings.Join(b.exceptions, "\n"))
		}
	})
	return b
}

// do runs actions with a deadline; a failure ends the test with a screenshot.
func (b *browser) do(d time.Duration, what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fatalf("%s: %v", what, err)
	}
}

// open navigates to a path of the console and waits for the selector.
func (b *browser) open(path, waitFor string) {
	b.t.Helper()
	b.do(shortWait, "open "+path, chromedp.Navigate(b.base+path), chromedp.WaitVisible(chromedp.CSS(waitFor)))
}

// click clicks the first element of a CSS selector. A live update may swap the element
// between the moment chromedp finds it and the click: the click is then tried again on
// the new element.
func (b *browser) click(sel string) {
	b.t.Helper()
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(b.ctx, shortWait)
		err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
		cancel()
		if err == nil {
			return
		}
		if attempt == 3 || !strings.Contains(err.Error(), "Could not find node") && !strings.Contains(err.Error(), "detached") {
			b.fatalf("click %s: %v", sel, err)
		}
	}
}

// choose clicks a radio button or checkbox and waits until it is checked, clicking it
// again when the click did not take (a live update may replace the form between finding
// the element and the click landing).
func (b *browser) choose(sel string) {
	b.t.Helper()
	cond := fmt.Sprintf(`(function(){var e=document.querySelector(%q);return !!(e&&e.checked)})()`, sel)
	for attempt := 1; ; attempt++ {
		b.click(sel)
		var checked bool
		deadline := time.Now().Add(time.Second)
		for !checked && time.Now().Before(deadline) {
			b.eval(cond, &checked)
			if !checked {
				time.Sleep(50 * time.Millisecond)
			}
		}
		if checked {
			return
		}
		if attempt == 3 {
			b.fatalf("%s is not checked after 3 clicks", sel)
		}
		b.t.Logf("%s was not checked after click %d: clicking again", sel, attempt)
	}
}

// visible waits until the selector is visible.
func (b *browser) visible(sel string, d time.Duration) {
	b.t.Helper()
	b.do(d, "wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
}

// setValue sets the value of a field (and fires its input event).
func (b *browser) setValue(sel, v string) {
	b.t.Helper()
	b.fillChecked(false, sel, v)
}

// fill sets fields (selector, value, …) and reads them back, again when a live refresh
// replaced the form while it was being filled (the node went away, or a value was lost).
func (b *browser) fill(pairs ...string) {
	b.t.Helper()
	b.fillChecked(true, pairs...)
}

func (b *browser) fillChecked(readBack bool, pairs ...string) {
	b.t.Helper()
	for attempt := 1; ; attempt++ {
		err := b.fillOnce(pairs, readBack)
		if err == nil {
			return
		}
		if attempt == 3 || !strings.Contains(err.Error(), "No node") && !strings.Contains(err.Error(), "detached") &&
			!strings.Contains(err.Error(), "Could not find node") && !strings.Contains(err.Error(), "value lost") {
			b.fatalf("fill: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (b *browser) fillOnce(pairs []string, readBack bool) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		ctx, cancel := context.WithTimeout(b.ctx, shortWait)
		err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(pairs[i]), pairs[i+1]))
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", pairs[i], err)
		}
	}
	for i := 0; readBack && i+1 < len(pairs); i += 2 {
		if b.value(pairs[i]) != pairs[i+1] {
			return fmt.Errorf("%s: value lost (a refresh replaced the form)", pairs[i])
		}
	}
	return nil
}

// typeInto clears a field and types into it.
func (b *browser) typeInto(sel, v string) {
	b.t.Helper()
	b.do(shortWait, "type into "+sel, chromedp.Clear(chromedp.CSS(sel)), chromedp.SendKeys(chromedp.CSS(sel), v))
}

// text is the visible text of the first element of a selector ("" when there is none).
func (b *browser) text(sel string) string {
	b.t.Helper()
	var s string
	b.eval(fmt.Sprintf(`(function(){var e=document.querySelector(%q);return e?e.innerText.trim():""})()`, sel), &s)
	return s
}

// value is the current value of a field.
func (b *browser) value(sel string) string {
	b.t.Helper()
	var s string
	b.eval(fmt.Sprintf(`(function(){var e=document.querySelector(%q);return e?e.value:""})()`, sel), &s)
	return s
}

// count is the number of elements of a selector.
func (b *browser) count(sel string) int {
	b.t.Helper()
	var n int
	b.eval(fmt.Sprintf(`document.querySelectorAll(%q).length`, sel), &n)
	return n
}

// eval evaluates a JavaScript expression (promises are awaited) into out.
func (b *browser) eval(js string, out any) {
	b.t.Helper()
	if err := b.tryEval(js, out); err != nil {
		b.fatalf("evaluate %s: %v", short(js), err)
	}
}

func (b *browser) tryEval(js string, out any) error {
	ctx, cancel := context.WithTimeout(b.ctx, shortWait)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](js, chromedp.EvalAwaitPromise))
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if len(raw) == 0 {
		return errors.New("no value")
	}
	return json.Unmarshal(raw, out)
}

// waitJS polls a JavaScript condition until it is true; it survives navigations.
func (b *browser) waitJS(what, cond string, d time.Duration) {
	b.t.Helper()
	start := time.Now()
	deadline := start.Add(d)
	var lastErr error
	for {
		var ok bool
		if lastErr = b.tryEval("!!("+cond+")", &ok); lastErr == nil && ok {
			if took := time.Since(start); took > 3*time.Second {
				b.t.Logf("waited %s for %s", took.Round(100*time.Millisecond), what)
			}
			return
		}
		if time.Now().After(deadline) {
			b.fatalf("timed out after %s waiting for %s (last error: %v)", d, what, lastErr)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// path is the current location's path and query.
func (b *browser) path() string {
	b.t.Helper()
	var s string
	b.eval(`location.pathname + location.search`, &s)
	return s
}

// mark sets a marker on the current document: it stays only while no navigation
// or reload happens.
func (b *browser) mark() { b.eval(`window.__e2eMark = "same-document"`, nil) }

// marked reports whether the document is still the one mark saw.
func (b *browser) marked() bool {
	var s string
	b.eval(`window.__e2eMark || ""`, &s)
	return s == "same-document"
}

// viewport sets the window's CSS width (and height).
func (b *browser) viewport(w, h int64) {
	b.t.Helper()
	b.do(shortWait, "viewport", chromedp.EmulateViewport(w, h))
}

// colorScheme emulates the system's colour scheme ("dark", "light" or "" for none).
func (b *browser) colorScheme(s string) {
	b.t.Helper()
	b.do(shortWait, "color scheme", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		p := emulation.SetEmulatedMediaParams{}
		if s != "" {
			p.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: s}}
		}
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, p)
		return err
	}))
}

// dialogsSeen returns the messages of the dialogs answered so far.
func (b *browser) dialogsSeen() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.dialogs...)
}

// shot saves a full-page screenshot under the artifacts folder.
func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, shortWait)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(artifacts(b.t), fileName(b.t.Name())+"--"+name+".png")
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	b.t.Logf("screenshot %s", p)
}

// fatalf ends the test with a screenshot and the page's text.
func (b *browser) fatalf(format string, args ...any) {
	b.t.Helper()
	b.shot("failure")
	var body string
	_ = b.tryEval(`document.body ? location.href + "\n" + document.body.innerText : location.href`, &body)
	b.t.Fatalf(format+"\npage:\n%s", append(args, short2(body, 4000))...)
}

// login signs in on the login page.
func (b *browser) login(email, password string) {
	b.t.Helper()
	b.open("/login", "[data-testid=login-form]")
	b.typeInto("#f-email", email)
	b.typeInto("#f-password", password)
	b.do(shortWait, "sign in", chromedp.Click(chromedp.CSS("[data-testid=login-form] button[type=submit]")))
	b.waitJS("the regions list", `location.pathname === "/regions" && document.querySelector("h1") && document.readyState === "complete"`, shortWait)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func fileName(s string) string { return strings.Trim(unsafeName.ReplaceAllString(s, "_"), "_") }

func short(s string) string { return short2(s, 120) }

func short2(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// use points the browser's failures at a subtest; the returned func restores the test.
func (b *browser) use(t *testing.T) func() {
	old := b.t
	b.t = t
	return func() { b.t = old }
}

// submit clicks a button that submits a plain form (or a link) and waits for the next
// document.
func (b *browser) submit(sel string) {
	b.t.Helper()
	b.mark()
	b.click(sel)
	b.waitJS("the page after "+sel, `!window.__e2eMark && document.readyState === "complete"`, shortWait)
}

// reload reloads the page.
func reload() chromedp.Action[chromedp.Void] { return chromedp.Reload() }

// attr is an attribute of the first element of a selector ("" when missing).
func (b *browser) attr(sel, name string) string {
	b.t.Helper()
	var s string
	b.eval(fmt.Sprintf(`(function(){var e=document.querySelector(%q);return e?(e.getAttribute(%q)||""):""})()`, sel, name), &s)
	return s
}

// waitFor polls a Go condition.
func (b *browser) waitFor(what string, cond func() bool, d time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			b.fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
