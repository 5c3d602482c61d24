// Package apitest drives the console through its JSON API against simulated clusters
// and the stand-in chart repository: the wizard's installs, settings, status, moves.
package apitest

import (
	"fmt"
	"os"
	"testing"
	"time"

	"runr.dev/console/config"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
)

// repo is the stand-in chart repository every test of the package shares.
var repo *testcluster.ChartRepo

func TestMain(m *testing.M) {
	var err error
	repo, err = testcluster.StartChartRepo("")
	if err != nil {
		fmt.Fprintln(os.Stderr, "apitest: chart repository:", err)
		os.Exit(1)
	}
	code := m.Run()
	repo.Close()
	os.Exit(code)
}

// console starts a console with running job workers, configured for the simulated clusters.
func console(t *testing.T, tweak func(*config.Config)) *webtest.Env {
	e := webtest.New(t, func(c *config.Config) {
		c.ChartMirror = repo.URL
		c.StorageTestTimeout = 4 * time.Second
		c.InstallTimeout = 90 * time.Second
		// The local-cluster rewrite goes to another loopback address here, never outside.
		c.LocalClusterHost = "127.0.0.2"
		c.StatusInterval = time.Hour
		if tweak != nil {
			tweak(c)
		}
	})
	e.Run()
	return e
}
