// Package agent is the runr-agent: it runs in a region, watches the cluster through
// client-go informers and reports to the console over WebSocket: per-minute metric
// snapshots, pod sessions and Kubernetes events.
package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Message is one report of the agent.
type Message struct {
	Type string    `json:"type"` // hello | snapshot | pod | event
	At   time.Time `json:"at"`

	Region  string `json:"region,omitempty"`
	Version string `json:"version,omitempty"`

	Snapshot *Snapshot `json:"snapshot,omitempty"`

	Namespace string `json:"namespace,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Event     string `json:"event,omitempty"` // start | stop | restart
	Restarts  int32  `json:"restarts,omitempty"`

	Object  string `json:"object,omitempty"`
	Kind    string `json:"kind,omitempty"` // Normal | Warning
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Snapshot is CPU and memory, requested against allocatable, per node and per project
// namespace, and what each project's running pods request (what the Billing module meters).
type Snapshot struct {
	Nodes      []NodeUsage      `json:"nodes"`
	Namespaces []NamespaceUsage `json:"namespaces"`
	Projects   []ProjectUsage   `json:"projects,omitempty"`
}

// ProjectUsage is what the pods of one project (label runr.dev/project) request.
type ProjectUsage struct {
	Project      string `json:"project"`
	Namespace    string `json:"namespace"`
	CPURequested int64  `json:"cpu_requested_m"`
	MemRequested int64  `json:"memory_requested"`
	GPUs         int64  `json:"gpus,omitempty"`
	Pods         int    `json:"pods"`
}

// NodeUsage is one node's share of a snapshot.
type NodeUsage struct {
	Name           string `json:"name"`
	CPUAllocatable int64  `json:"cpu_allocatable_m"`
	CPURequested   int64  `json:"cpu_requested_m"`
	MemAllocatable int64  `json:"memory_allocatable"`
	MemRequested   int64  `json:"memory_requested"`
	Pods           int    `json:"pods"`
}

// NamespaceUsage is one project namespace's share of a snapshot.
type NamespaceUsage struct {
	Name         string `json:"name"`
	CPURequested int64  `json:"cpu_requested_m"`
	MemRequested int64  `json:"memory_requested"`
	Pods         int    `json:"pods"`
}

// Config configures an agent.
type Config struct {
	URL      string // the console's agent endpoint (ws:// or wss://)
	Token    string
	Region   string
	Version  string
	Interval time.Duration // snapshot interval (a minute)
	Client   kubernetes.Interface
	Log      *slog.Logger
	// PingInterval detects a dead connection (20 s).
	PingInterval time.Duration
}

// Agent is a running agent.
type Agent struct {
	cfg     Config
	out     chan Message
	factory informers.SharedInformerFactory
	mu      sync.Mutex
	conns   int
}

// BufferSize is how many reports wait while the console is unreachable; older ones are dropped.
const BufferSize = 2000

// New builds an agent.
func New(cfg Config) *Agent {
	if cfg.Interval == 0 {
		cfg.Interval = time.Minute
	}
	if cfg.PingInterval == 0 {
		cfg.PingInterval = 20 * time.Second
	}
	return &Agent{cfg: cfg, out: make(chan Message, BufferSize), factory: informers.NewSharedInformerFactory(cfg.Client, 10*time.Minute)}
}

func (a *Agent) send(m Message) {
	m.At = time.Now().UTC()
	select {
	case a.out <- m:
	default:
		// The console has been away long: drop the oldest report to keep the newest.
		select {
		case <-a.out:
		default:
		}
		select {
		case a.out <- m:
		default:
		}
	}
}

// maxBackoff is the longest the agent waits between two tries (drawn between half and one
// and a half of it): a console back from a restart has all its agents within that.
const maxBackoff = 15 * time.Second

// Run watches the cluster and reports until ctx ends, reconnecting with backoff and jitter.
func (a *Agent) Run(ctx context.Context) error {
	if err := a.watch(ctx); err != nil {
		return err
	}
	go a.snapshots(ctx)
	backoff := time.Second
	for ctx.Err() == nil {
		start := time.Now()
		err := a.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(start) > time.Minute {
			backoff = time.Second
		}
		// Full jitter: a fleet of agents does not reconnect in step after a console restart.
		wait := time.Duration(rand.Int64N(int64(backoff))) + backoff/2
		a.cfg.Log.Warn("agent: disconnected from the console; reconnecting", "err", err, "in", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		backoff = min(backoff*2, maxBackoff)
	}
	return nil
}

// session is one WebSocket connection: it sends reports and pings until it breaks.
func (a *Agent) session(ctx context.Context) error {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+a.cfg.Token)
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	conn, resp, err := d.DialContext(ctx, a.cfg.URL, h)
	if err != nil {
		if resp != nil {
			return fmt.Errorf("dial %s: %s", a.cfg.URL, resp.Status)
		}
		return fmt.Errorf("dial %s: %w", a.cfg.URL, err)
	}
	defer conn.Close()
	a.mu.Lock()
	a.conns++
	a.mu.Unlock()
	a.cfg.Log.Info("agent: connected to the console", "url", a.cfg.URL)

	dead := a.cfg.PingInterval * 3
	_ = conn.SetReadDeadline(time.Now().Add(dead))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(dead)) })
	readErr := make(chan error, 1)
	go func() {
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				readErr <- err
				return
			}
		}
	}()
	write := func(m Message) error {
		raw, _ := json.Marshal(m)
		_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		return conn.WriteMessage(websocket.TextMessage, raw)
	}
	if err := write(Message{Type: "hello", At: time.Now().UTC(), Region: a.cfg.Region, Version: a.cfg.Version}); err != nil {
		return err
	}
	ping := time.NewTicker(a.cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "agent stopping"))
			return ctx.Err()
		case err := <-readErr:
			return err
		case <-ping.C:
			_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if err := conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				return err
			}
		case m := <-a.out:
			if err := write(m); err != nil {
				// Keep the report for the next connection.
				a.send(m)
				return err
			}
		}
	}
}

// watch starts the informers: pod sessions and events are reported as they happen.
func (a *Agent) watch(ctx context.Context) error {
	pods := a.factory.Core().V1().Pods().Informer()
	_, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Pod)
			n, ok2 := newObj.(*corev1.Pod)
			if !ok1 || !ok2 {
				return
			}
			if o.Status.Phase != corev1.PodRunning && n.Status.Phase == corev1.PodRunning {
				a.send(Message{Type: "pod", Namespace: n.Namespace, Pod: n.Name, Event: "start"})
			}
			if r := restarts(n); r > restarts(o) {
				a.send(Message{Type: "pod", Namespace: n.Namespace, Pod: n.Name, Event: "restart", Restarts: r})
			}
		},
		DeleteFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				a.send(Message{Type: "pod", Namespace: p.Namespace, Pod: p.Name, Event: "stop", Restarts: restarts(p)})
			}
		},
	})
	if err != nil {
		return fmt.Errorf("agent: pod informer: %w", err)
	}
	events := a.factory.Core().V1().Events().Informer()
	var synced atomic.Bool
	_, err = events.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			e, ok := obj.(*corev1.Event)
			if !ok || !synced.Load() {
				return
			}
			a.send(Message{Type: "event", Namespace: e.Namespace, Object: e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name,
				Kind: e.Type, Reason: e.Reason, Message: e.Message})
		},
	})
	if err != nil {
		return fmt.Errorf("agent: event informer: %w", err)
	}
	a.factory.Core().V1().Nodes().Informer()
	a.factory.Core().V1().Namespaces().Informer()
	a.factory.Start(ctx.Done())
	for typ, ok := range a.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("agent: the %v informer did not sync", typ)
		}
	}
	synced.Store(true) // events from before the agent started are not reported again
	return nil
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

// snapshots reports a metric snapshot every interval.
func (a *Agent) snapshots(ctx context.Context) {
	t := time.NewTicker(a.cfg.Interval)
	defer t.Stop()
	for {
		if snap, err := a.Snapshot(); err == nil {
			a.send(Message{Type: "snapshot", Snapshot: snap})
		} else {
			a.cfg.Log.Warn("agent: snapshot", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Snapshot computes requested against allocatable from the informers' caches.
func (a *Agent) Snapshot() (*Snapshot, error) {
	nodes, err := a.factory.Core().V1().Nodes().Lister().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	pods, err := a.factory.Core().V1().Pods().Lister().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	projectNS := map[string]bool{}
	if nss, err := a.factory.Core().V1().Namespaces().Lister().List(labels.Everything()); err == nil {
		for _, ns := range nss {
			if _, ok := ns.Labels["runr.dev/region"]; ok {
				projectNS[ns.Name] = true
			}
		}
	}
	byNode := map[string]*NodeUsage{}
	snap := &Snapshot{Nodes: []NodeUsage{}, Namespaces: []NamespaceUsage{}}
	for _, n := range nodes {
		byNode[n.Name] = &NodeUsage{Name: n.Name, CPUAllocatable: n.Status.Allocatable.Cpu().MilliValue(), MemAllocatable: n.Status.Allocatable.Memory().Value()}
	}
	byNS := map[string]*NamespaceUsage{}
	byProject := map[string]*ProjectUsage{}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		cpu, mem := PodRequests(p)
		if nu, ok := byNode[p.Spec.NodeName]; ok {
			nu.CPURequested += cpu
			nu.MemRequested += mem
			nu.Pods++
		}
		if projectNS[p.Namespace] {
			nu := byNS[p.Namespace]
			if nu == nil {
				nu = &NamespaceUsage{Name: p.Namespace}
				byNS[p.Namespace] = nu
			}
			nu.CPURequested += cpu
			nu.MemRequested += mem
			nu.Pods++
			if id := p.Labels["runr.dev/project"]; id != "" && p.Status.Phase == corev1.PodRunning {
				pu := byProject[id]
				if pu == nil {
					pu = &ProjectUsage{Project: id, Namespace: p.Namespace}
					byProject[id] = pu
				}
				pu.CPURequested += cpu
				pu.MemRequested += mem
				pu.GPUs += podGPUs(p)
				pu.Pods++
			}
		}
	}
	for _, pu := range byProject {
		snap.Projects = append(snap.Projects, *pu)
	}
	for _, n := range nodes {
		snap.Nodes = append(snap.Nodes, *byNode[n.Name])
	}
	for ns := range projectNS {
		if nu, ok := byNS[ns]; ok {
			snap.Namespaces = append(snap.Namespaces, *nu)
		} else {
			snap.Namespaces = append(snap.Namespaces, NamespaceUsage{Name: ns})
		}
	}
	return snap, nil
}

// podGPUs is the GPUs a pod's containers ask for (nvidia.com/gpu, a limit or a request).
func podGPUs(p *corev1.Pod) int64 {
	var n int64
	for _, c := range p.Spec.Containers {
		q, ok := c.Resources.Limits["nvidia.com/gpu"]
		if !ok {
			q = c.Resources.Requests["nvidia.com/gpu"]
		}
		n += q.Value()
	}
	return n
}

// PodRequests sums a pod's CPU (millicores) and memory (bytes) requests.
func PodRequests(p *corev1.Pod) (int64, int64) {
	var cpu, mem int64
	for _, c := range p.Spec.Containers {
		cpu += c.Resources.Requests.Cpu().MilliValue()
		mem += c.Resources.Requests.Memory().Value()
	}
	for _, c := range p.Spec.InitContainers {
		// Init containers run before the others: their largest request counts.
		cpu = max(cpu, c.Resources.Requests.Cpu().MilliValue())
		mem = max(mem, c.Resources.Requests.Memory().Value())
	}
	return cpu, mem
}
