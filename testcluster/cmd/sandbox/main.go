// Command sandbox builds the simulated cluster's binaries and runs a sandbox cluster
// with the stand-in chart repository (make sandbox).
package main

import (
	"fmt"
	"os"

	"runr.dev/console/testcluster"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sandbox build|start|stop")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "build":
		b, err := testcluster.Build(os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sandbox:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "simulated cluster binaries ready in", b.Dir)
	default:
		fmt.Fprintln(os.Stderr, "sandbox: unknown command", os.Args[1])
		os.Exit(2)
	}
}
