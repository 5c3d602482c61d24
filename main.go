// Command runr is the regions console: `runr serve` runs it, and the other subcommands
// are the operator's tools. Every subcommand reads DATABASE_URL and RUNR_APP_KEY.
package main

import (
	"fmt"
	"os"

	"runr.dev/console/cli"
	"runr.dev/console/config"
)

// version is stamped at build time (-X main.version=...).
var version = "dev"

func main() {
	config.Version = version
	if err := cli.NewRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "runr:", err)
		os.Exit(1)
	}
}
