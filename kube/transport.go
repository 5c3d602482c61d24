package kube

import "net/http"

// PolicyTransport is an HTTP transport for the other servers the console reads on a
// user's word (image registries): every connection passes the address policy
// (CheckAddress, after DNS, redirects included) and none goes through a proxy.
func PolicyTransport(allowLoopback bool) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = PolicyDialer(allowLoopback)
	return t
}
