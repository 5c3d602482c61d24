package testcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// keptState is what a cluster kept across restarts (Options.StateDir) needs to come back
// as it was: its credentials and the ports its clients know.
type keptState struct {
	AdminToken   string    `json:"admin_token"`
	LimitedToken string    `json:"limited_token"`
	Ports        keptPorts `json:"ports"`
}

// keptPorts are the ports of a kept cluster (0: not picked yet).
type keptPorts struct {
	EtcdClient  int `json:"etcd_client"`
	EtcdPeer    int `json:"etcd_peer"`
	EtcdMetrics int `json:"etcd_metrics"`
	API         int `json:"api"`
}

func keptStateFile(dir string) string { return filepath.Join(dir, "state.json") }

// startKept starts the cluster kept in opts.StateDir: the first time a new one (recorded
// once it runs), afterwards the same one again on the same ports, with its data.
func startKept(opts Options, bins *Binaries, logf func(string, ...any)) (*Cluster, error) {
	if opts.RealNode {
		return nil, errors.New("testcluster: a cluster with a real node is not kept across restarts")
	}
	dir := opts.StateDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("testcluster: state dir: %w", err)
	}
	var st keptState
	raw, err := os.ReadFile(keptStateFile(dir))
	fresh := errors.Is(err, os.ErrNotExist)
	switch {
	case fresh:
		st = keptState{AdminToken: randHex(16), LimitedToken: randHex(16)}
	case err != nil:
		return nil, fmt.Errorf("testcluster: read %s: %w", keptStateFile(dir), err)
	default:
		if err := json.Unmarshal(raw, &st); err != nil {
			return nil, fmt.Errorf("testcluster: %s is damaged (%w): remove %s for a new cluster", keptStateFile(dir), err, dir)
		}
		for _, p := range []int{st.Ports.EtcdClient, st.Ports.EtcdPeer, st.Ports.EtcdMetrics, st.Ports.API} {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				return nil, fmt.Errorf("testcluster: port %d of the kept cluster is in use (%w): stop what uses it, or remove %s for a new cluster", p, err, dir)
			}
			ln.Close()
		}
	}
	c := &Cluster{Name: filepath.Base(dir), Dir: dir, LBAddress: opts.LBAddress, stopCh: make(chan struct{}), log: logf, noLB: opts.NoLoadBalancer,
		AdminToken: st.AdminToken, LimitedToken: st.LimitedToken, ports: &st.Ports, kept: true}
	c.lbIngress = c.LBAddress
	if err := c.start(opts, bins); err != nil {
		c.Stop()
		if fresh {
			// Nothing worth keeping: the next start begins anew.
			os.RemoveAll(dir)
		}
		return nil, err
	}
	if fresh {
		raw, err := json.MarshalIndent(st, "", "  ")
		if err == nil {
			err = os.WriteFile(keptStateFile(dir), raw, 0o600)
		}
		if err != nil {
			c.Stop()
			return nil, fmt.Errorf("testcluster: record the kept cluster: %w", err)
		}
	}
	return c, nil
}

// port is one of the cluster's ports: a kept cluster's own (picked and recorded the first
// time), else a free one.
func (c *Cluster) port(of func(*keptPorts) *int) int {
	if c.ports == nil {
		return freePort()
	}
	if p := of(c.ports); *p == 0 {
		*p = freePort()
	}
	return *of(c.ports)
}
