package kube

import (
	"net/netip"
	"net/url"
	"testing"
)

// FuzzParseKubeconfig: any input is refused or accepted without a panic, and what is
// accepted names an http(s) server, no plugin, no proxy and no file.
func FuzzParseKubeconfig(f *testing.F) {
	f.Add(kubeconfigFor("https://203.0.113.10:6443", ""))
	f.Add(kubeconfigFor("https://127.0.0.1:6443", "    insecure-skip-tls-verify: true"))
	f.Add(kubeconfigFor("https://203.0.113.10:6443", "    proxy-url: http://10.0.0.1:3128"))
	f.Add([]byte("apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    exec: {command: aws}\n"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		k, err := ParseKubeconfig(raw)
		if err != nil {
			if !IsKubeconfigError(err) {
				t.Fatalf("a refusal must be a KubeconfigError: %v", err)
			}
			return
		}
		u, perr := url.Parse(k.Server)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			t.Fatalf("accepted server %q", k.Server)
		}
		kctx := k.Config.Contexts[k.Config.CurrentContext]
		cl, ai := k.Config.Clusters[kctx.Cluster], k.Config.AuthInfos[kctx.AuthInfo]
		if ai.Exec != nil || ai.AuthProvider != nil || cl.ProxyURL != "" || cl.CertificateAuthority != "" || ai.TokenFile != "" {
			t.Fatal("accepted a plugin, a proxy or a file")
		}
		if _, err := k.RESTConfig(); err != nil {
			t.Fatalf("accepted but no client config: %v", err)
		}
	})
}

// FuzzCheckAddress: whatever the address, a refused class never passes, loopback
// passes only when allowed, and IPv4-mapped forms are judged as IPv4.
func FuzzCheckAddress(f *testing.F) {
	for _, s := range []string{"169.254.169.254", "127.0.0.1", "::ffff:127.0.0.1", "fe80::1", "0.0.0.0", "10.0.0.1", "ff02::1", "::7f00:1"} {
		b := netip.MustParseAddr(s).AsSlice()
		f.Add(b, false)
	}
	f.Fuzz(func(t *testing.T, raw []byte, allowLoopback bool) {
		ip, ok := netip.AddrFromSlice(raw)
		if !ok {
			return
		}
		err := CheckAddress(ip, allowLoopback)
		u := ip.Unmap()
		bad := u.IsLinkLocalUnicast() || u.IsLinkLocalMulticast() || u.IsUnspecified() || u.IsMulticast() ||
			(u.Is4() && (u.As4()[0] == 0 || u == netip.AddrFrom4([4]byte{255, 255, 255, 255}))) || (u.IsLoopback() && !allowLoopback)
		if bad && err == nil {
			t.Fatalf("%s passed (loopback allowed %v)", ip, allowLoopback)
		}
		if (err == nil) != (CheckAddress(u, allowLoopback) == nil) {
			t.Fatalf("%s and its unmapped form are judged differently", ip)
		}
	})
}
