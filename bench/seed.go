package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
	"github.com/miekg/dns"

	"runr.dev/console/agent"
	"runr.dev/console/crypt"
	"runr.dev/console/kube"
	"runr.dev/console/ops"
	"runr.dev/console/store"
)

var regionPrefixes = []string{"eu-west", "eu-central", "eu-north", "us-east", "us-west", "ap-south", "ap-northeast", "sa-east"}

// regionName is the i-th seeded region's name (eu-west-1, eu-central-1, …).
func regionName(i int) string {
	return fmt.Sprintf("%s-%d", regionPrefixes[i%len(regionPrefixes)], i/len(regionPrefixes)+1)
}

func dataLocation(i int) string {
	switch p := regionPrefixes[i%len(regionPrefixes)]; {
	case strings.HasPrefix(p, "eu"):
		return "EU"
	case strings.HasPrefix(p, "us"):
		return "US"
	case strings.HasPrefix(p, "ap"):
		return "APAC"
	default:
		return "LATAM"
	}
}

var (
	caOnce sync.Once
	caPEM  []byte
)

// fakeCA is a real self-signed certificate, so that seeded kubeconfigs have the size and
// shape of real ones.
func fakeCA() []byte {
	caOnce.Do(func() {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour), IsCA: true,
			KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true}
		der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	})
	return caPEM
}

// kubeconfigFor writes a token kubeconfig for a server.
func kubeconfigFor(name, server, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: %[2]s
    certificate-authority-data: %[3]s
users:
- name: %[1]s-admin
  user:
    token: %[4]s
contexts:
- name: %[1]s
  context:
    cluster: %[1]s
    user: %[1]s-admin
    namespace: default
current-context: %[1]s
`, name, server, base64.StdEncoding.EncodeToString(fakeCA()), token)
}

// RegionSeed is what seedRegion needs to know of one region.
type RegionSeed struct {
	Name       string
	Kubeconfig string
	Server     string
	Location   string
	ExternalIP string
	Domain     string
	// Components installed on the region's cluster (prometheus, loki, …).
	Components []string
	Registry   bool
	Health     store.Health
	Nodes      []string
}

// seedRegion creates one region through the store with the fields an installed region has.
func seedRegion(ctx context.Context, st *store.Store, s RegionSeed) (*store.Region, error) {
	now := time.Now().UTC()
	comps := map[string]store.ComponentState{}
	for _, c := range s.Components {
		comps[c] = store.ComponentState{Status: store.ComponentReady, Version: "bench", UpdatedAt: now}
	}
	agentTok := crypt.RandomToken("runr_agent_")
	r := &store.Region{
		Name: s.Name, Kubeconfig: s.Kubeconfig, ClusterServer: s.Server, ClusterKey: kube.ClusterKey(s.Server),
		K8sVersion: "v1.32.4", Nodes: pq.StringArray(s.Nodes), DataLocation: s.Location,
		Settings:  store.JSON[store.RegionSettings]{V: store.RegionSettings{RequestTimeout: 300, KnativeDomain: s.Domain}},
		RedisMode: store.RedisNone, RegistryMode: store.RegistryNone,
		Components: store.JSON[map[string]store.ComponentState]{V: comps},
		AgentToken: agentTok, AgentTokenHash: crypt.HashToken(agentTok),
	}
	if s.Registry {
		r.RegistryMode = store.RegistryInternal
		r.RegistryConfig = store.JSON[store.RegistryConfig]{V: store.RegistryConfig{StorageType: "pvc", StorageClass: "standard", Size: "20Gi"}}
		r.RegistrySecret = crypt.RandomToken("")
	}
	if err := st.CreateRegion(ctx, r); err != nil {
		return nil, err
	}
	if err := st.UpdateOperator(ctx, r.ID, store.OperatorUpdate{Status: store.Ptr(store.ComponentReady), Version: store.Ptr("1.20.2")}); err != nil {
		return nil, err
	}
	if err := st.UpdateServing(ctx, r.ID, store.ServingUpdate{Status: store.Ptr(store.ComponentReady), Version: store.Ptr("1.20.3"),
		ExternalIP: store.Ptr(s.ExternalIP), DNSResolved: store.Ptr(true)}); err != nil {
		return nil, err
	}
	if err := st.SaveCheck(ctx, r.ID, store.CheckUpdate{Health: s.Health, CheckedAt: now}); err != nil {
		return nil, err
	}
	if s.Registry {
		if err := st.UpdateRegistry(ctx, r.ID, store.RegistryUpdate{Status: store.Ptr(store.ComponentReady),
			Address: store.Ptr("runr-zot.runr-registry.svc.cluster.local:5000")}); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// okHealth is the health an answering, installed region shows.
func okHealth(domain, ip string) store.Health {
	now := time.Now().UTC()
	return store.Health{
		API:        store.HealthLayer{State: store.HealthOK, Reason: "answered in 14 ms (v1.32.4)", CheckedAt: now},
		Components: store.HealthLayer{State: store.HealthOK, Reason: "ready: serving, traefik, registry, prometheus, loki", CheckedAt: now, Items: map[string]string{"serving": "ready", "traefik": "Deployment knative-serving/traefik: 1/1 replicas available", "registry": "ready", "prometheus": "ready", "loki": "ready"}},
		External:   store.HealthLayer{State: store.HealthOK, Reason: "dns-check." + domain + " resolves to " + ip, CheckedAt: now},
	}
}

// parallel runs f(i) for i in [0, n) on w goroutines and returns the first error.
func parallel(n, w int, f func(i int) error) error {
	var next atomic.Int64
	var first error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < w; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// seedSettingsJob records a finished "apply settings" job with its steps and log lines,
// the history a region's General tab shows. It has no region yet (attachJob sets it), so
// that it can be written before any console runs: a queued job would be claimed.
func seedSettingsJob(ctx context.Context, st *store.Store, name string) (string, error) {
	j := &store.Job{Kind: ops.KindApplySettings, Title: "Apply the General settings of " + name, CreatedBy: "bench@example.com",
		Params: json.RawMessage(`{"request_timeout":300}`)}
	steps := []store.JobStep{{Name: "connect", Title: "Connect to the cluster"}, {Name: "config", Title: "Update config-network and config-defaults"}, {Name: "traefik", Title: "Roll out Traefik"}}
	if err := st.CreateJob(ctx, j, steps, ""); err != nil {
		return "", err
	}
	for i := range steps {
		if _, err := st.SetStep(ctx, j.ID, i, store.StepRunning, "", ""); err != nil {
			return "", err
		}
		for k := 0; k < 6; k++ {
			if _, err := st.AddEvent(ctx, &store.JobEvent{JobID: j.ID, Kind: "log", StepIdx: i, Level: "info",
				Message: fmt.Sprintf("%s: applied ConfigMap knative-serving/config-%d (server-side apply, field manager runr-console)", steps[i].Title, k)}); err != nil {
				return "", err
			}
		}
		if _, err := st.SetStep(ctx, j.ID, i, store.StepDone, "done", ""); err != nil {
			return "", err
		}
	}
	return j.ID, st.FinishJob(ctx, j.ID, store.JobSucceeded, "")
}

// seedSnapshot stores an agent snapshot of a region (its usage on the General tab).
func seedSnapshot(ctx context.Context, st *store.Store, regionID string, nodes []string) error {
	snap := agent.Snapshot{}
	for _, n := range nodes {
		snap.Nodes = append(snap.Nodes, agent.NodeUsage{Name: n, CPUAllocatable: 8000, CPURequested: 2350, MemAllocatable: 16 << 30, MemRequested: 6 << 30, Pods: 31})
	}
	snap.Namespaces = []agent.NamespaceUsage{{Name: "default", CPURequested: 500, MemRequested: 1 << 30, Pods: 4}}
	raw, _ := json.Marshal(snap)
	return st.AddSnapshot(ctx, regionID, time.Now().UTC(), raw)
}

// DNSServer answers A questions on loopback for the status check (RUNR_DNS_RESOLVER), so
// that the system resolver is never asked.
type DNSServer struct {
	Addr    string
	srv     *dns.Server
	mu      sync.RWMutex
	records map[string]string // fqdn -> IPv4
	Queries atomic.Int64
}

func startDNS() (*DNSServer, error) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &DNSServer{Addr: pc.LocalAddr().String(), records: map[string]string{}}
	d.srv = &dns.Server{PacketConn: pc, Handler: d}
	started := make(chan struct{})
	d.srv.NotifyStartedFunc = func() { close(started) }
	go d.srv.ActivateAndServe()
	<-started
	return d, nil
}

// Set makes name resolve to ip.
func (d *DNSServer) Set(name, ip string) {
	d.mu.Lock()
	d.records[dns.Fqdn(strings.ToLower(name))] = ip
	d.mu.Unlock()
}

// ServeDNS implements dns.Handler.
func (d *DNSServer) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	d.Queries.Add(1)
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	found := false
	for _, q := range req.Question {
		d.mu.RLock()
		ip, ok := d.records[strings.ToLower(q.Name)]
		d.mu.RUnlock()
		if !ok {
			continue
		}
		found = true
		if q.Qtype == dns.TypeA {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.ParseIP(ip).To4()})
		}
	}
	if !found {
		m.Rcode = dns.RcodeNameError
	}
	w.WriteMsg(m)
}

// Close stops the server.
func (d *DNSServer) Close() { d.srv.Shutdown() }

// blackHole accepts TCP connections on loopback and never answers: a cluster that hangs.
type blackHole struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	n     atomic.Int64
}

func startBlackHole() (*blackHole, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &blackHole{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.n.Add(1)
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
		}
	}()
	return b, nil
}

func (b *blackHole) URL() string { return "https://" + b.ln.Addr().String() }

func (b *blackHole) Close() {
	b.ln.Close()
	b.mu.Lock()
	for _, c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
}
