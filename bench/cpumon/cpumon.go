// Package cpumon samples the CPU time of every process and splits it between a
// benchmark's own processes and the rest of the machine.
package cpumon

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clkTck is the kernel's clock tick (USER_HZ), 100 on Linux/amd64.
const clkTck = 100

// Monitor samples every process's CPU time once a second and splits it between the
// benchmark's own processes (the bench, the consoles and clusters it starts, and the
// PostgreSQL server of its data directory) and everything else on the machine, so that
// the results can say how much other work shared the CPUs.
type Monitor struct {
	pgDir string
	self  int

	mu     sync.Mutex
	prev   map[int]uint64
	ours   float64 // CPU seconds
	others float64
	top    map[string]float64 // others' CPU seconds by command
	mine   map[string]float64 // our CPU seconds by command
	stop   chan struct{}
	done   chan struct{}
}

// Usage is the CPU use over a window.
type Usage struct {
	Wall   time.Duration
	Ours   float64 // CPU seconds
	Others float64
	Top    map[string]float64
	Mine   map[string]float64
}

// AddWindow adds a window's wall time, the benchmark's CPU seconds by command and other
// work's CPU seconds to u (whose Mine must not be nil).
func (u *Usage) AddWindow(w Usage) {
	u.Wall += w.Wall
	u.Others += w.Others
	for k, v := range w.Mine {
		u.Mine[k] += v
	}
}

// Start samples every second until Close; pgDir names the benchmark's PostgreSQL data directory.
func Start(pgDir string) *Monitor {
	m := &Monitor{pgDir: pgDir, self: os.Getpid(), prev: map[int]uint64{}, top: map[string]float64{}, mine: map[string]float64{},
		stop: make(chan struct{}), done: make(chan struct{})}
	m.sample()
	go func() {
		defer close(m.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				m.sample()
			}
		}
	}()
	return m
}

// Close stops the sampling.
func (m *Monitor) Close() {
	close(m.stop)
	<-m.done
}

type procInfo struct {
	ppid  int
	ticks uint64
	comm  string
	cmd   string
}

func readProcs() map[int]procInfo {
	out := map[int]procInfo{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(raw)
		l, r := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if l < 0 || r < 0 {
			continue
		}
		f := strings.Fields(s[r+1:])
		// f[0] state, f[1] ppid, …, f[11] utime, f[12] stime
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseUint(f[11], 10, 64)
		st, _ := strconv.ParseUint(f[12], 10, 64)
		p := procInfo{ppid: ppid, ticks: ut + st, comm: s[l+1 : r]}
		if p.comm == "postgres" {
			cl, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			p.cmd = strings.ReplaceAll(string(cl), "\x00", " ")
		}
		out[pid] = p
	}
	return out
}

func (m *Monitor) sample() {
	procs := readProcs()
	roots := map[int]bool{m.self: true}
	for pid, p := range procs {
		if p.comm == "postgres" && m.pgDir != "" && strings.Contains(p.cmd, m.pgDir) {
			roots[pid] = true
		}
	}
	ours := func(pid int) bool {
		for i := 0; i < 64 && pid > 1; i++ {
			if roots[pid] {
				return true
			}
			p, ok := procs[pid]
			if !ok {
				return false
			}
			pid = p.ppid
		}
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	first := len(m.prev) == 0
	next := make(map[int]uint64, len(procs))
	for pid, p := range procs {
		next[pid] = p.ticks
		if first {
			continue
		}
		before, seen := m.prev[pid]
		var d uint64
		switch {
		case seen && p.ticks >= before:
			d = p.ticks - before
		case !seen:
			d = p.ticks // started since the last sample
		}
		secs := float64(d) / clkTck
		if ours(pid) {
			m.ours += secs
			m.mine[p.comm] += secs
		} else {
			m.others += secs
			m.top[p.comm] += secs
		}
	}
	m.prev = next
}

// Mark returns the totals so far, to diff against later.
func (m *Monitor) Mark() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	top, mine := map[string]float64{}, map[string]float64{}
	for k, v := range m.top {
		top[k] = v
	}
	for k, v := range m.mine {
		mine[k] = v
	}
	return Usage{Wall: time.Duration(time.Now().UnixNano()), Ours: m.ours, Others: m.others, Top: top, Mine: mine}
}

// Since is the usage between a mark and now.
func (m *Monitor) Since(a Usage) Usage {
	b := m.Mark()
	u := Usage{Wall: b.Wall - a.Wall, Ours: b.Ours - a.Ours, Others: b.Others - a.Others, Top: map[string]float64{}, Mine: map[string]float64{}}
	for k, v := range b.Top {
		if d := v - a.Top[k]; d > 0.05 {
			u.Top[k] = d
		}
	}
	for k, v := range b.Mine {
		if d := v - a.Mine[k]; d > 0.05 {
			u.Mine[k] = d
		}
	}
	return u
}
