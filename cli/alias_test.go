package cli

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

func TestAliasRewritesHost(t *testing.T) {
	var got string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Host }))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	front := httptest.NewServer(aliasHandler("eu-2.new.test", "eu-2.old.test", u))
	defer front.Close()
	req, _ := http.NewRequest("GET", front.URL+"/hello", nil)
	req.Host = "shop.eu-2.new.test"
	if _, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	if got != "shop.eu-2.old.test" {
		t.Fatalf("upstream saw host %q, want shop.eu-2.old.test", got)
	}
}
