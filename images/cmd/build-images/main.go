// Command build-images builds the console's OCI images (`make images`): an OCI image
// layout under --out and, with --push, the same images in a registry.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"runr.dev/console/images"
)

func main() {
	var o images.Options
	flag.StringVar(&o.Version, "version", "", "the version stamped into runr, and the images' tag")
	flag.StringVar(&o.OutDir, "out", "", "the OCI image layout to write (default bin/images)")
	flag.StringVar(&o.Push, "push", "", "a repository to push the images to as well, e.g. ghcr.io/brf-tech/runr")
	flag.StringVar(&o.Arch, "arch", "", "the CPU architecture (default this machine's)")
	flag.Parse()
	o.Log = os.Stderr
	built, err := images.Build(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, b := range built {
		fmt.Printf("%s@%s\n", b.Ref, b.Digest)
	}
}
