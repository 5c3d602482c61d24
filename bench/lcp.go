package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's Chromium, which scripts/bench.sh installs.
const chromiumPath = "/usr/bin/chromium"

// paint is what one cold load of a page measured in the browser, from navigation start.
type paint struct {
	TTFB float64 `json:"ttfb"` // the first byte of the answer
	// Parsed is when the HTML was parsed (domInteractive); Scripts when the deferred
	// scripts had run (domContentLoadedEventStart).
	Parsed  float64 `json:"parsed"`
	Scripts float64 `json:"scripts"`
	FCP     float64 `json:"fcp"` // First Contentful Paint
	LCP     float64 `json:"lcp"` // Largest Contentful Paint
	Tag     string  `json:"tag"` // the element of the LCP
	// Bytes is the HTML's decoded size, Elements the page's element count at the end.
	Bytes    int `json:"bytes"`
	Elements int `json:"elements"`
	// Main is the renderer's main-thread time over the page's load (ms): scripts, style,
	// layout and all its tasks (the DevTools Performance domain's counters).
	Main mainThread `json:"-"`
	// Loads are the page's resources: path, start and end (ms).
	Loads []resourceLoad `json:"loads"`
}

// mainThread is a renderer's main-thread time by kind (ms).
type mainThread struct{ Script, Style, Layout, Tasks float64 }

// rendererTime reads the renderer's main-thread counters (cumulative, in seconds).
func rendererTime(ctx context.Context) (mainThread, error) {
	res, err := chromedp.Call(ctx, performance.GetMetrics, cdp.Empty{})
	if err != nil {
		return mainThread{}, err
	}
	var m mainThread
	for _, x := range res.Metrics {
		switch x.Name {
		case "ScriptDuration":
			m.Script = x.Value * 1000
		case "RecalcStyleDuration":
			m.Style = x.Value * 1000
		case "LayoutDuration":
			m.Layout = x.Value * 1000
		case "TaskDuration":
			m.Tasks = x.Value * 1000
		}
	}
	return m, nil
}

// resourceLoad is one resource of the page as Resource Timing saw it.
type resourceLoad struct {
	Path  string  `json:"path"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// paintJS reads the navigation's timings and its last Largest Contentful Paint candidate.
const paintJS = `new Promise(done => {
  const nav = performance.getEntriesByType('navigation')[0];
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  new PerformanceObserver(list => {
    const es = list.getEntries(), e = es[es.length - 1];
    done({ttfb: nav.responseStart, parsed: nav.domInteractive, scripts: nav.domContentLoadedEventStart,
          fcp: fcp ? fcp.startTime : 0, lcp: e.startTime,
          bytes: nav.decodedBodySize, elements: document.getElementsByTagName('*').length,
          tag: e.element ? e.element.tagName.toLowerCase() + (e.element.id ? '#' + e.element.id : '') : '',
          loads: performance.getEntriesByType('resource').map(r => ({path: new URL(r.name).pathname, start: r.startTime, end: r.responseEnd}))});
  }).observe({type: 'largest-contentful-paint', buffered: true});
})`

// benchLCP measures a region page's Largest Contentful Paint in headless Chromium with
// o.Regions regions (issue #38): each run starts a browser with an empty profile (cold
// cache), signed in by the session cookie, opens /healthz (which starts the renderer of
// the console's site) and then loads the page once.
func benchLCP(env *Env, rep *Report, o *Options) error {
	sec := rep.section("7", "Region page paint in Chromium")
	if _, err := os.Stat(chromiumPath); err != nil {
		return fmt.Errorf("%s is not installed (scripts/bench.sh installs Debian's chromium): %w", chromiumPath, err)
	}
	p, err := pagesConsole(env, "lcp", o.Regions)
	if err != nil {
		return err
	}
	defer p.close()
	cookie, err := p.con.Login()
	if err != nil {
		return fmt.Errorf("sign in: %w", err)
	}
	page := "http://" + p.con.Addr + "/regions/" + p.ids[len(p.ids)/2]
	var runs []paint
	for i := range o.LCPRuns {
		fmt.Printf("cold load %d of %d: %s\n", i+1, o.LCPRuns, page)
		m, err := coldPaint(page, p.con.Addr, cookie.Name, cookie.Value)
		if err != nil {
			return fmt.Errorf("load %d: %w", i+1, err)
		}
		runs = append(runs, m)
	}
	id := sec.cmd("C7", fmt.Sprintf("%s\n# console under test: %s %s serve\n# %d times: %s --headless --user-data-dir=$(mktemp -d) (a new profile: cold cache), cookie %s set, Page.navigate /healthz (starts the renderer of the site; nothing to cache), then Page.navigate %s and, 1 s after the load event, in the page:\n%s",
		benchCmd(o, "lcp"), p.con.EnvFor(), env.Runr, o.LCPRuns, chromiumPath, cookie.Name, page, paintJS))
	reportLCP(rep, sec, o, runs, id)
	return nil
}

// coldPaint starts a browser with an empty profile, loads page signed in and reads the
// page's paint timings.
func coldPaint(page, host, cookieName, cookieValue string) (paint, error) {
	dir, err := os.MkdirTemp("", "bench-chromium-")
	if err != nil {
		return paint{}, err
	}
	defer os.RemoveAll(dir)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		// Names never resolve: the console is addressed as 127.0.0.1.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.UserDataDir(dir), chromedp.WindowSize(1280, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	// The first action starts the browser, without a deadline (it would end the browser).
	if err := chromedp.Do(ctx); err != nil {
		return paint{}, fmt.Errorf("start chromium: %w", err)
	}
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()
	setCookie := func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		httpOnly := true
		_, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{Name: cookieName, Value: cookieValue,
			Domain: strings.Split(host, ":")[0], Path: "/", HTTPOnly: &httpOnly})
		return chromedp.Void{}, err
	}
	// /healthz first (two bytes of text, nothing to cache) starts the renderer of the
	// console's site: the page is measured with a cold cache, not a cold browser.
	// Late candidates (fragments loaded after the load event) are in the buffer too.
	warm := "http://" + host + "/healthz"
	if err := chromedp.Do(ctx, setCookie, chromedp.Navigate(warm)); err != nil {
		return paint{}, err
	}
	if _, err := chromedp.Call(ctx, performance.Enable, performance.EnableParams{}); err != nil {
		return paint{}, err
	}
	before, err := rendererTime(ctx)
	if err != nil {
		return paint{}, err
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(page), chromedp.Sleep(time.Second)); err != nil {
		return paint{}, err
	}
	m, err := chromedp.Run(ctx, chromedp.Evaluate[paint](paintJS, chromedp.EvalAwaitPromise))
	if err != nil {
		return paint{}, err
	}
	after, err := rendererTime(ctx)
	if err != nil {
		return paint{}, err
	}
	m.Main = mainThread{Script: after.Script - before.Script, Style: after.Style - before.Style,
		Layout: after.Layout - before.Layout, Tasks: after.Tasks - before.Tasks}
	if m.LCP <= 0 {
		return m, fmt.Errorf("the browser reported no Largest Contentful Paint for %s", page)
	}
	return m, nil
}

// reportLCP records the median of the runs against the target and each run in the notes.
func reportLCP(rep *Report, sec *Section, o *Options, runs []paint, id string) {
	lcps := make([]float64, len(runs))
	for i, r := range runs {
		lcps[i] = r.LCP
	}
	sorted := slices.Clone(lcps)
	slices.Sort(sorted)
	med := sorted[len(sorted)/2]
	rep.check("7", fmt.Sprintf("a region page's Largest Contentful Paint, %d regions, cold browser cache (median of %d)", o.Regions, len(runs)),
		fmt.Sprintf("%.0f ms", med), "< 300 ms", med < 300, id)
	rep.add("7", "the same, slowest run", fmt.Sprintf("%.0f ms", sorted[len(sorted)-1]), id)
	var each []string
	for i, r := range runs {
		var loads []string
		for _, l := range r.Loads {
			loads = append(loads, fmt.Sprintf("%s %.0f–%.0f", l.Path, l.Start, l.End))
		}
		each = append(each, fmt.Sprintf("run %d: first byte %.0f ms, parsed %.0f ms (%s), deferred scripts run by %.0f ms, FCP %.0f ms, LCP %.0f ms (%s); main thread %.0f ms (scripts %.0f, style %.0f, layout %.0f)",
			i+1, r.TTFB, r.Parsed, strings.Join(loads, ", "), r.Scripts, r.FCP, r.LCP, r.Tag, r.Main.Tasks, r.Main.Script, r.Main.Style, r.Main.Layout))
	}
	sec.note("Each run is a new headless Chromium with an empty profile, so nothing of the page (HTML, CSS, scripts) is cached; it opens /healthz first, so that the renderer of the console's site runs (a browser's own start is not the page's cost) and the connection may be reused. The timings are the browser's own (Navigation Timing, Paint Timing, Largest Contentful Paint), from the page's navigation start. %s.", strings.Join(each, "; "))
	if len(runs) > 0 {
		sec.note("The page: %d bytes of HTML, %d elements once loaded.", runs[0].Bytes, runs[0].Elements)
	}
	sec.note("The console and the browser share this machine's 2 CPUs; the console was seeded as in benchmark 1 (%d regions, each with a finished job and an agent snapshot).", o.Regions)
}
