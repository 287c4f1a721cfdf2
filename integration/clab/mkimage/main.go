// Command mkimage builds the containerlab lab's node image (clab.BuildImage):
// run it as `go run ./integration/clab/mkimage` from the repository, with
// Docker running; docs/containerlab.md tells the rest.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/openinof/inof/integration/clab"
)

func main() {
	tag := flag.String("tag", clab.DefaultImage, "image tag")
	busybox := flag.String("busybox", "/bin/busybox", "statically linked busybox (Debian: busybox-static)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := clab.BuildImage(ctx, clab.ImageOptions{Tag: *tag, Busybox: *busybox}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("built image %s\n", *tag)
}
