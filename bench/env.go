package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/lib/pq"

	"runr.dev/console/bench/cpumon"
	"runr.dev/console/crypt"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
)

// appKey is the RUNR_APP_KEY of every console the benchmarks start (the tests' key).
const appKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// Env is what every benchmark shares: the PostgreSQL server, the runr binary, the
// stand-in chart repository and a folder for logs.
type Env struct {
	AdminURL string // database postgres of the private server
	Runr     string // path of bin/runr
	Repo     *testcluster.ChartRepo
	LogDir   string
	KeepDB   bool
	Profiles string // directory of the consoles' CPU profiles (-cpuprofile-dir), or empty
	Mon      *cpumon.Monitor
	dbSeq    int
}

// NewDB creates a fresh, empty database for one benchmark and returns its URL.
func (e *Env) NewDB(prefix string) (string, error) {
	e.dbSeq++
	name := fmt.Sprintf("bench_%s_%d_%d", prefix, os.Getpid(), e.dbSeq)
	db, err := sql.Open("postgres", e.AdminURL)
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
		return "", err
	}
	if _, err := db.Exec(`CREATE DATABASE ` + name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	u, err := url.Parse(e.AdminURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// DropDB removes a benchmark's database (kept with -keep-db).
func (e *Env) DropDB(dbURL string) {
	if e.KeepDB {
		fmt.Println("kept database", dbURL)
		return
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		return
	}
	db, err := sql.Open("postgres", e.AdminURL)
	if err != nil {
		return
	}
	defer db.Close()
	db.Exec(`DROP DATABASE IF EXISTS ` + strings.TrimPrefix(u.Path, "/") + ` WITH (FORCE)`)
}

// NewStore creates a fresh database for a benchmark and opens its store; drop closes the
// store and removes the database.
func (e *Env) NewStore(prefix string) (dbURL string, st *store.Store, drop func(), err error) {
	if dbURL, err = e.NewDB(prefix); err != nil {
		return "", nil, nil, err
	}
	if st, err = OpenStore(dbURL); err != nil {
		e.DropDB(dbURL)
		return "", nil, nil, fmt.Errorf("open the store of %s: %w", dbURL, err)
	}
	return dbURL, st, func() { st.Close(); e.DropDB(dbURL) }, nil
}

// StartConsole prepares a console on a fresh database and starts it; stop ends the
// console and removes the database.
func (e *Env) StartConsole(name, dbPrefix string) (c *Console, stop func(), err error) {
	dbURL, err := e.NewDB(dbPrefix)
	if err != nil {
		return nil, nil, err
	}
	if c, err = e.NewConsole(name, dbURL, true); err == nil {
		err = c.Start()
	}
	if err != nil {
		e.DropDB(dbURL)
		return nil, nil, err
	}
	return c, func() { c.Stop(); e.DropDB(dbURL) }, nil
}

// OpenStore opens the store of a benchmark's database, as the console does.
func OpenStore(dbURL string) (*store.Store, error) {
	cipher, err := crypt.NewCipher(appKey)
	if err != nil {
		return nil, err
	}
	return store.Open(context.Background(), dbURL, cipher)
}

// freeAddr returns 127.0.0.1:PORT with a port that was free a moment ago.
func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Console is one `bin/runr serve` process and what the benchmarks need to drive it.
type Console struct {
	Name  string
	Addr  string
	DBURL string
	Env   []string
	Token string
	// Email and Password sign in through the login form.
	Email, Password string

	runr    string
	own     int // where the console's own settings start in Env
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
}

// NewConsole prepares a console on a database: `runr migrate`, `runr user create`,
// `runr token create` (the database is shared when two consoles get the same URL).
func (e *Env) NewConsole(name, dbURL string, setup bool, extra ...string) (*Console, error) {
	addr := freeAddr()
	c := &Console{Name: name, Addr: addr, DBURL: dbURL, runr: e.Runr, logPath: filepath.Join(e.LogDir, name+".log"),
		Email: "bench@example.com", Password: "correct horse battery staple"}
	c.Env = baseEnv()
	c.own = len(c.Env)
	c.Env = append(c.Env,
		"DATABASE_URL="+dbURL,
		"RUNR_APP_KEY="+appKey,
		"RUNR_ADDR="+addr,
		"RUNR_APP_URL=http://"+addr,
		"RUNR_CHART_MIRROR="+e.Repo.URL,
		"RUNR_LOCAL_CLUSTER_HOST=127.0.0.2",
		// The simulated clusters listen on loopback addresses.
		"RUNR_ALLOW_LOOPBACK_CLUSTERS=true",
		"RUNR_STATUS_INTERVAL=1h",
		"RUNR_LOG_LEVEL=warn",
		// One bench process stands for many browsers: its 500 subscribers and 64
		// connections per endpoint come from one address and one user.
		"RUNR_MAX_CONNECTIONS_PER_ADDRESS=100000",
		"RUNR_SOCKETS_PER_USER=100000",
	)
	c.Env = append(c.Env, extra...)
	if e.Profiles != "" {
		c.Env = append(c.Env, "RUNR_CPU_PROFILE="+filepath.Join(e.Profiles, name+".cpu.pprof"))
	}
	if !setup {
		return c, nil
	}
	if _, err := c.Run("migrate"); err != nil {
		return nil, err
	}
	if _, err := c.Run("user", "create", "--email", c.Email, "--role", "owner", "--password", c.Password); err != nil {
		return nil, err
	}
	tok, err := c.Run("token", "create", "--email", c.Email, "--name", "bench", "--scopes", "*")
	if err != nil {
		return nil, err
	}
	c.Token = tok
	return c, nil
}

// baseEnv is the environment of the processes the benchmarks start: the bench's own,
// without any setting of the console that could leak in from the shell.
func baseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "RUNR_") || k == "DATABASE_URL" || k == "APP_URL" || k == "KNATIVE_MIN_K8S_MINOR" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// EnvFor returns the console-specific part of its environment (for the results file);
// the application key is shown as $RUNR_APP_KEY.
func (c *Console) EnvFor() string {
	var parts []string
	for _, kv := range c.Env[c.own:] {
		if strings.HasPrefix(kv, "RUNR_APP_KEY=") {
			kv = "RUNR_APP_KEY=$KEY"
		}
		parts = append(parts, kv)
	}
	return strings.Join(parts, " ")
}

// Run runs a runr subcommand with the console's environment and returns its stdout.
func (c *Console) Run(args ...string) (string, error) {
	cmd := exec.Command(c.runr, args...)
	cmd.Env = c.Env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("runr %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// Start runs `runr serve` and waits for /healthz.
func (c *Console) Start() error {
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	c.cmd = exec.Command(c.runr, "serve")
	c.cmd.Env = c.Env
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	c.exited = make(chan struct{})
	go func() { c.cmd.Wait(); logf.Close(); close(c.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-c.exited:
			return fmt.Errorf("console %s exited: %s", c.Name, c.LogTail())
		default:
		}
		if resp, err := http.Get("http://" + c.Addr + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				// The boot-time status sweep runs on an empty database and ends at once;
				// the next one is an hour away (RUNR_STATUS_INTERVAL=1h).
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("console %s did not answer /healthz: %s", c.Name, c.LogTail())
}

// Pid is the console process's id.
func (c *Console) Pid() int { return c.cmd.Process.Pid }

// Stop ends the console (SIGTERM, then SIGKILL after 15 s).
func (c *Console) Stop() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	select {
	case <-c.exited:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

// LogTail returns the last lines of the console's log.
func (c *Console) LogTail() string {
	raw, _ := os.ReadFile(c.logPath)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// LogGrep counts the lines of the console's log that contain s.
func (c *Console) LogGrep(s string) int {
	raw, _ := os.ReadFile(c.logPath)
	return strings.Count(string(raw), s)
}

// API sends a JSON request with the console's bearer token and decodes the answer.
func (c *Console) API(method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, "http://"+c.Addr+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %d: %s", method, path, resp.StatusCode, truncate(string(raw), 300))
		}
	}
	if resp.StatusCode >= 400 && out == nil {
		return resp.StatusCode, fmt.Errorf("%s %s: %d: %s", method, path, resp.StatusCode, truncate(string(raw), 300))
	}
	return resp.StatusCode, nil
}

var apiClient = &http.Client{Timeout: 60 * time.Second}

// Login signs in through the login form and returns the session cookie.
func (c *Console) Login() (*http.Cookie, error) {
	jar := map[string]*http.Cookie{}
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get("http://" + c.Addr + "/login")
	if err != nil {
		return nil, err
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, ck := range resp.Cookies() {
		jar[ck.Name] = ck
	}
	csrf := between(string(page), `name="_csrf" value="`, `"`)
	if csrf == "" {
		return nil, errors.New("login: no CSRF token in the login page")
	}
	form := url.Values{"email": {c.Email}, "password": {c.Password}, "_csrf": {csrf}}
	req, _ := http.NewRequest("POST", "http://"+c.Addr+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, ck := range jar {
		req.AddCookie(ck)
	}
	resp, err = client.Do(req)
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusFound {
		return nil, fmt.Errorf("login: %s", resp.Status)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == "runr_session" {
			return ck, nil
		}
	}
	return nil, errors.New("login: no session cookie")
}

func between(s, a, b string) string {
	i := strings.Index(s, a)
	if i < 0 {
		return ""
	}
	s = s[i+len(a):]
	j := strings.Index(s, b)
	if j < 0 {
		return ""
	}
	return s[:j]
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// procStatus reads fields (in kB) of /proc/PID/status, e.g. VmRSS and VmHWM.
func procStatus(pid int) map[string]int64 {
	out := map[string]int64{}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || !strings.HasPrefix(k, "Vm") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err == nil {
			out[k] = n
		}
	}
	return out
}
