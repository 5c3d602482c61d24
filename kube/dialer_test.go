package kube

import (
	"fmt"
	"net/netip"
	"testing"
)

func kubeconfigFor(server string, extra string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: c
contexts:
- name: c
  context: {cluster: k, user: u}
clusters:
- name: k
  cluster:
    server: %q
%s
users:
- name: u
  user: {token: abc}
`, server, extra))
}

func TestCheckAddress(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		loopback bool
		ok       bool
	}{
		{"169.254.169.254", true, false}, {"169.254.0.1", true, false}, {"fe80::1", true, false},
		{"::ffff:169.254.169.254", true, false}, {"0.0.0.0", true, false}, {"0.1.2.3", true, false}, {"::", true, false},
		{"224.0.0.1", true, false}, {"239.255.255.250", true, false}, {"ff02::1", true, false}, {"255.255.255.255", true, false},
		{"::7f00:1", true, false},
		// Metadata services elsewhere, and 169.254.169.254 carried in IPv6.
		{"fd00:ec2::254", true, false}, {"100.100.100.200", true, false},
		{"64:ff9b::a9fe:a9fe", true, false}, {"64:ff9b::169.254.169.254", true, false}, {"64:ff9b:1::a9fe:a9fe", true, false},
		{"2002:a9fe:a9fe::1", true, false}, {"2002:7f00:1::", false, false},
		{"64:ff9b::a00:1", false, true}, {"2002:cb00:710a::1", false, true}, {"100.100.100.201", false, true},
		{"127.0.0.1", false, false}, {"127.9.9.9", false, false}, {"::1", false, false}, {"::ffff:127.0.0.1", false, false},
		{"127.0.0.1", true, true}, {"::1", true, true}, {"::ffff:127.0.0.1", true, true},
		{"10.0.0.1", false, true}, {"192.168.1.10", false, true}, {"203.0.113.10", false, true}, {"2001:db8::1", false, true},
	} {
		err := CheckAddress(netip.MustParseAddr(tc.addr), tc.loopback)
		if (err == nil) != tc.ok {
			t.Errorf("%s (loopback allowed %v): %v, want ok=%v", tc.addr, tc.loopback, err, tc.ok)
		}
	}
}

// counting is a loopback server that counts the connections it accepted.
