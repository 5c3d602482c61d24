package e2e

import (
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// checkLabels fails when a field has no label, or a button no name.
func (b *browser) checkLabels(page string) {
	b.t.Helper()
	var bad []string
	b.eval(`(function(){
		var bad = [];
		document.querySelectorAll("input,select,textarea").forEach(function(e){
			if (e.type === "hidden") return;
			var labelled = Array.from(e.labels || []).some(function(l){ return l.textContent.trim() !== ""; });
			if (!labelled && !e.getAttribute("aria-label") && !e.getAttribute("aria-labelledby")) bad.push("field " + e.outerHTML.slice(0, 140));
		});
		document.querySelectorAll("button").forEach(function(e){
			if (e.textContent.trim() === "" && !e.getAttribute("aria-label")) bad.push("button " + e.outerHTML.slice(0, 140));
		});
		return bad;
	})()`, &bad)
	if len(bad) > 0 {
		b.fatalf("%s: without a label:\n%s", page, strings.Join(bad, "\n"))
	}
}

// checkFocus tabs through the first controls of the page and fails when the focused
// one shows no outline (or ring).
func (b *browser) checkFocus(page string, tabs int) {
	b.t.Helper()
	b.eval(`document.activeElement && document.activeElement.blur(), window.scrollTo(0, 0)`, nil)
	seen := 0
	for i := 0; i < tabs; i++ {
		b.do(shortWait, "Tab", chromedp.KeyEvent(kb.Tab))
		var res struct {
			Tag     string
			Visible bool
			HTML    string
		}
		b.eval(`(function(){
			var e = document.activeElement;
			if (!e || e === document.body) return {Tag: "", Visible: false, HTML: ""};
			var s = getComputedStyle(e);
			var outline = s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0;
			var ring = s.boxShadow && s.boxShadow !== "none";
			return {Tag: e.tagName, Visible: outline || ring, HTML: e.outerHTML.slice(0, 140)};
		})()`, &res)
		if res.Tag == "" {
			continue
		}
		seen++
		if !res.Visible {
			b.fatalf("%s: the keyboard focus is not visible on %s", page, res.HTML)
		}
	}
	if seen == 0 {
		b.fatalf("%s: Tab focused nothing", page)
	}
}

// checkNarrow loads the current page at 390 px wide and fails when it, or anything in
// it, scrolls sideways (tables read as cards on a phone).
func (b *browser) checkNarrow(page string) {
	b.t.Helper()
	b.viewport(390, 844)
	defer b.viewport(1280, 900)
	// Let the layout settle after the resize.
	b.do(shortWait, "settle", chromedp.Sleep(200*time.Millisecond))
	var over []string
	b.eval(`(function(){
		var w = document.documentElement.clientWidth;
		var out = [];
		// Nothing scrolls sideways inside the page either (a table reads as cards).
		document.querySelectorAll("body *").forEach(function(e){
			var s = getComputedStyle(e);
			if ((s.overflowX === "auto" || s.overflowX === "scroll") && e.scrollWidth > e.clientWidth + 1 && e.getClientRects().length > 0)
				out.push(e.tagName + "." + String(e.className).slice(0, 60) + " scrolls sideways: " + e.scrollWidth + " px in " + e.clientWidth + " px");
		});
		if (document.documentElement.scrollWidth <= w + 1) return out;
		out.push("the page is " + document.documentElement.scrollWidth + " px wide");
		var wide = [];
		document.querySelectorAll("body *").forEach(function(e){
			var r = e.getBoundingClientRect();
			if (r.right > w + 1) wide.push([r.right, e.tagName + "." + String(e.className).slice(0, 60)]);
		});
		wide.sort(function(a, b){ return b[0] - a[0] });
		wide.slice(0, 5).forEach(function(x){ out.push(x[1] + " ends at " + Math.round(x[0])) });
		return out;
	})()`, &over)
	b.shot(page + "-390px")
	if len(over) > 0 {
		b.fatalf("%s at 390 px: wider than the screen:\n%s", page, strings.Join(over, "\n"))
	}
}

// checkDark emulates a dark system theme and fails unless the page turns dark, then
// a light one.
func (b *browser) checkDark(page string) {
	b.t.Helper()
	defer b.colorScheme("")
	lum := func() float64 {
		var l float64
		b.eval(`(function(){
			var m = getComputedStyle(document.body).backgroundColor.match(/[\d.]+/g).map(Number);
			return (0.2126 * m[0] + 0.7152 * m[1] + 0.0722 * m[2]) / 255;
		})()`, &l)
		return l
	}
	b.colorScheme("dark")
	if l := lum(); l > 0.2 {
		b.fatalf("%s: the system is dark but the page's background has luminance %.2f", page, l)
	}
	b.checkAccessible(page + " (dark)")
	var textLum float64
	b.eval(`(function(){
		var m = getComputedStyle(document.body).color.match(/[\d.]+/g).map(Number);
		return (0.2126 * m[0] + 0.7152 * m[1] + 0.0722 * m[2]) / 255;
	})()`, &textLum)
	if textLum < 0.6 {
		b.fatalf("%s: dark mode text has luminance %.2f: too dark to read", page, textLum)
	}
	b.shot(page + "-dark")
	b.colorScheme("light")
	if l := lum(); l < 0.8 {
		b.fatalf("%s: the system is light but the page's background has luminance %.2f", page, l)
	}
}

// checkFeel runs the page-level checks: labels, axe-core's accessibility rules, focus,
// 390 px, dark mode (axe-core again).
func (b *browser) checkFeel(page string) {
	b.t.Helper()
	b.checkLabels(page)
	b.checkAccessible(page)
	b.checkFocus(page, 4)
	b.checkNarrow(page)
	b.checkDark(page)
}
