package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Figure is one measured value, with its target when the issue sets one.
type Figure struct {
	Bench  string // "1", "2", …
	What   string
	Value  string
	Target string // "" for a figure without a target
	Met    *bool
	Cmd    string // the id of the command behind it (Report.Commands)
}

// Section is one benchmark's part of the results file.
type Section struct {
	ID    string
	Title string
	// Commands are the exact commands behind the figures, by id.
	Commands []Command
	Notes    []string
	// Details is extra Markdown (tables of waits, per-job timings).
	Details []string
	Err     error
}

// Command is one exact command behind figures.
type Command struct {
	ID   string
	Text string
}

// Report collects every figure of a run.
type Report struct {
	Started  time.Time
	Finished time.Time
	Argv     string
	Figures  []Figure
	Sections map[string]*Section
	Order    []string
	Machine  Machine
}

func newReport(argv string) *Report {
	return &Report{Started: time.Now(), Argv: argv, Sections: map[string]*Section{}, Machine: readMachine()}
}

func (r *Report) section(id, title string) *Section {
	if s, ok := r.Sections[id]; ok {
		return s
	}
	s := &Section{ID: id, Title: title}
	r.Sections[id] = s
	r.Order = append(r.Order, id)
	return s
}

func (s *Section) cmd(id, text string) string {
	s.Commands = append(s.Commands, Command{ID: id, Text: text})
	return id
}

func (s *Section) note(format string, args ...any) {
	s.Notes = append(s.Notes, fmt.Sprintf(format, args...))
}

// add records a figure without a target.
func (r *Report) add(bench, what, value, cmd string) {
	r.Figures = append(r.Figures, Figure{Bench: bench, What: what, Value: value, Cmd: cmd})
	fmt.Printf("  %-58s %s\n", what, value)
}

// check records a figure with a target and whether it was met.
func (r *Report) check(bench, what, value, target string, met bool, cmd string) {
	m := met
	r.Figures = append(r.Figures, Figure{Bench: bench, What: what, Value: value, Target: target, Met: &m, Cmd: cmd})
	fmt.Printf("  %-58s %-14s target %-14s %s\n", what, value, target, verdict(&m))
}

func verdict(m *bool) string {
	switch {
	case m == nil:
		return ""
	case *m:
		return "met"
	default:
		return "NOT met"
	}
}

// Machine describes where the run happened.
type Machine struct {
	Nproc     int
	MemTotal  string
	CPU       string
	Kernel    string
	GoVersion string
	LoadStart string
	LoadEnd   string
	OtherProc string
	Netns     string
	Shared    string
	Build     string
}

func readMachine() Machine {
	m := Machine{Nproc: runtime.NumCPU(), GoVersion: runtime.Version()}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				var kb int64
				fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
				m.MemTotal = fmt.Sprintf("%.1f GiB (MemTotal %d kB)", float64(kb)/(1<<20), kb)
			}
		}
		f.Close()
	}
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if out, err := exec.Command("uname", "-sr").Output(); err == nil {
		m.Kernel = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("nproc").Output(); err == nil {
		fmt.Sscan(strings.TrimSpace(string(out)), &m.Nproc)
	}
	m.LoadStart = loadAvg()
	return m
}

func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// printTable prints the figures as a table on stdout.
func (r *Report) printTable() {
	fmt.Println()
	fmt.Println("== results")
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "#\tFIGURE\tMEASURED\tTARGET\tRESULT\tCMD")
	for _, f := range r.sorted() {
		t := f.Target
		if t == "" {
			t = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", f.Bench, f.What, f.Value, t, verdict(f.Met), f.Cmd)
	}
	w.Flush()
	for _, id := range r.sortedSections() {
		if s := r.Sections[id]; s.Err != nil {
			fmt.Printf("benchmark %s failed: %v\n", id, s.Err)
		}
	}
}

func (r *Report) sorted() []Figure {
	fs := append([]Figure(nil), r.Figures...)
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Bench < fs[j].Bench })
	return fs
}

func (r *Report) sortedSections() []string {
	ids := append([]string(nil), r.Order...)
	sort.Strings(ids)
	return ids
}

// markdown renders the results file.
func (r *Report) markdown() string {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "# Benchmark results\n\n")
	fmt.Fprintf(&b, "Written by `make bench` (`%s`) from a real run: started %s, finished %s (%s).\n\n",
		r.Argv, r.Started.UTC().Format("2006-01-02 15:04:05 MST"), r.Finished.UTC().Format("15:04:05 MST"), r.Finished.Sub(r.Started).Round(time.Second))
	fmt.Fprintf(&b, "## Machine\n\n")
	fmt.Fprintf(&b, "| | |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| nproc | %d |\n| memory | %s |\n| CPU | %s |\n| kernel | %s |\n| Go | %s |\n", m.Nproc, m.MemTotal, m.CPU, m.Kernel, m.GoVersion)
	fmt.Fprintf(&b, "| load average (1, 5, 15 min) at the start / at the end | %s / %s |\n", m.LoadStart, m.LoadEnd)
	if m.OtherProc != "" {
		fmt.Fprintf(&b, "| at the start | %s |\n", m.OtherProc)
	}
	if m.Shared != "" {
		fmt.Fprintf(&b, "| sharing | %s |\n", m.Shared)
	}
	fmt.Fprintf(&b, "| network | %s |\n", m.Netns)
	fmt.Fprintf(&b, "| console under test | %s |\n\n", m.Build)

	fmt.Fprintf(&b, "## Results\n\n")
	fmt.Fprintf(&b, "| # | Figure | Measured | Target | Result | Command |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, f := range r.sorted() {
		t, v := f.Target, verdict(f.Met)
		if t == "" {
			t = "—"
		}
		if v == "NOT met" {
			v = "**NOT met**"
		}
		if v == "" {
			v = "—"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | [%s](#%s) |\n", f.Bench, f.What, f.Value, t, v, f.Cmd, strings.ToLower(f.Cmd))
	}
	b.WriteString("\n")
	for _, id := range r.sortedSections() {
		s := r.Sections[id]
		fmt.Fprintf(&b, "## %s. %s\n\n", s.ID, s.Title)
		if s.Err != nil {
			fmt.Fprintf(&b, "**The benchmark failed:** `%s`\n\n", strings.ReplaceAll(s.Err.Error(), "`", "'"))
		}
		if len(s.Commands) > 0 {
			fmt.Fprintf(&b, "Commands:\n\n")
			for _, c := range s.Commands {
				fmt.Fprintf(&b, "<a id=\"%s\"></a>**%s**\n\n```\n%s\n```\n\n", strings.ToLower(c.ID), c.ID, c.Text)
			}
		}
		if len(s.Notes) > 0 {
			fmt.Fprintf(&b, "Method and limits:\n\n")
			for _, n := range s.Notes {
				fmt.Fprintf(&b, "- %s\n", n)
			}
			b.WriteString("\n")
		}
		for _, d := range s.Details {
			b.WriteString(d)
			if !strings.HasSuffix(d, "\n\n") {
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

// Stats summarises latencies.
type Stats struct {
	N             int
	P50, P99, Max time.Duration
	Mean          time.Duration
}

func statsOf(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Stats{N: len(s), P50: pct(s, 0.50), P99: pct(s, 0.99), Max: s[len(s)-1], Mean: sum / time.Duration(len(s))}
}

// pct is the nearest-rank percentile of sorted durations.
func pct(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}

func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case v < 100:
		return fmt.Sprintf("%.1f ms", v)
	default:
		return fmt.Sprintf("%.0f ms", v)
	}
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
