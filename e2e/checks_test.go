package e2e

import (
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// expectDescribedBy fails unless the field points at its error message.
func (b *browser) expectDescribedBy(field, errID string) {
	b.t.Helper()
	if got := b.attr(field, "aria-describedby"); !strings.Contains(got, errID) {
		b.fatalf("%s must be described by its error %s (aria-describedby=%q)", field, errID, got)
	}
	if got := b.attr(field, "aria-invalid"); got != "true" {
		b.fatalf("%s must be marked aria-invalid, got %q", field, got)
	}
	// Its border shows the error too: not the grey of a field without one (slate-300,
	// slate-600 in the dark), which the invalid colour used to lose to.
	var border string
	b.eval(fmt.Sprintf(`getComputedStyle(document.querySelector(%q)).borderTopColor`, field), &border)
	if border == "rgb(203, 213, 225)" || border == "rgb(71, 85, 105)" {
		b.fatalf("%s has an error but a grey border (%s)", field, border)
	}
}

// watchBusy records, across the navigation a plain form causes, whether the button
// was disabled and a busy indicator shown while its request ran.
func (b *browser) watchBusy(button, indicator string) {
	b.t.Helper()
	b.eval(fmt.Sprintf(`(function(){
		sessionStorage.setItem("e2eBusy", JSON.stringify({disabled: false, indicator: false}));
		var sel = %q, ind = %q;
		function check() {
			var s = JSON.parse(sessionStorage.getItem("e2eBusy"));
			var bt = document.querySelector(sel);
			if (bt && bt.disabled) s.disabled = true;
			var form = bt && bt.form;
			var shown = function(e){ var c = getComputedStyle(e); return c.display !== "none" && c.visibility !== "hidden" && parseFloat(c.opacity) > 0; };
			if (form && (form.getAttribute("aria-busy") === "true" || form.classList.contains("htmx-request"))) s.indicator = true;
			document.querySelectorAll(ind || "form .htmx-indicator").forEach(function(e){ if (shown(e) && e.closest(".htmx-request")) s.indicator = true; });
			sessionStorage.setItem("e2eBusy", JSON.stringify(s));
		}
		new MutationObserver(check).observe(document.documentElement, {subtree: true, attributes: true, childList: true});
	})()`, button, indicator), nil)
}

// expectBusy fails unless watchBusy saw the button disabled and the indicator.
func (b *browser) expectBusy(what string) {
	b.t.Helper()
	var s struct{ Disabled, Indicator bool }
	b.eval(`JSON.parse(sessionStorage.getItem("e2eBusy") || "{}")`, &s)
	if !s.Disabled || !s.Indicator {
		b.fatalf("%s: while the request ran the button must be disabled (%v) and an indicator shown (%v)", what, s.Disabled, s.Indicator)
	}
}

// expectReadOnly fails unless the section exists and has no control that changes
// anything.
func (b *browser) expectReadOnly(sel string) {
	b.t.Helper()
	var n int
	b.eval(fmt.Sprintf(`(function(){
		var s = document.querySelector(%q);
		if (!s) return -1;
		return s.querySelectorAll("input:not([type=hidden]), select, textarea, button, form").length;
	})()`, sel), &n)
	switch {
	case n < 0:
		b.fatalf("%s is missing", sel)
	case n > 0:
		b.fatalf("%s must be read-only, it has %d controls", sel, n)
	}
}

// expectWizardStates fails unless the wizard's steps show these states ("*": any).
func (b *browser) expectWizardStates(want ...string) {
	b.t.Helper()
	var got []string
	b.eval(`Array.from(document.querySelectorAll("[data-testid=wizard-step]")).map(function(e){ return e.dataset.state })`, &got)
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = want[i] == "*" || want[i] == got[i]
	}
	if !ok {
		b.fatalf("wizard steps %v, want %v", got, want)
	}
}

// watchJob records, in the page, what the live job view showed: the named waits, each
// step's states and the progress values.
func (b *browser) watchJob() {
	b.t.Helper()
	b.eval(`(function(){
		var r = window.__e2e = {waits: [], states: {}, progress: []};
		function look() {
			document.querySelectorAll("[data-testid=step-wait], [data-testid=job-wait]").forEach(function(e){
				var w = e.textContent.trim();
				if (w && r.waits.indexOf(w) < 0) r.waits.push(w);
			});
			document.querySelectorAll("[data-testid=job-step]").forEach(function(e){
				var a = r.states[e.dataset.step] = r.states[e.dataset.step] || [];
				if (a[a.length - 1] !== e.dataset.status) a.push(e.dataset.status);
			});
			var p = document.querySelector("[data-testid=job-progress]");
			if (p && r.progress[r.progress.length - 1] !== p.getAttribute("aria-valuenow")) r.progress.push(p.getAttribute("aria-valuenow"));
		}
		look();
		new MutationObserver(look).observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
	})()`, nil)
}

// doneSteps is the number of the job's steps shown done.
func (b *browser) doneSteps() int {
	b.t.Helper()
	return b.count("[data-testid=job-step][data-status=done]")
}

// expectElapsedTicks fails unless the elapsed time shows and moves.
func (b *browser) expectElapsedTicks(sel string) {
	b.t.Helper()
	first := b.text(sel)
	b.do(shortWait, "wait", chromedp.Sleep(2200*time.Millisecond))
	second := b.text(sel)
	if first == "" || second == "" || first == second {
		b.fatalf("the elapsed time must show and tick: %q then %q", first, second)
	}
}

// expectLogCollapses folds the job's log and opens it again.
func (b *browser) expectLogCollapses() {
	b.t.Helper()
	if b.count("[data-testid=log-line]") == 0 {
		b.fatalf("the job must show log lines")
	}
	b.click("[data-testid=job-log-toggle]")
	b.waitJS("the log to fold", `!document.querySelector("[data-testid=job-log]").checkVisibility()`, shortWait)
	b.click("[data-testid=job-log-toggle]")
	b.waitJS("the log to open", `document.querySelector("[data-testid=job-log]").checkVisibility()`, shortWait)
}
