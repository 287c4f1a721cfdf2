// Command inofctl is the admin CLI of an iNOF fabric: zones and aliases,
// fabric settings, devices and visibility, BGP and BFD sessions, the event
// feed and the lossless profile, over the gRPC API of inofd. See
// docs/cli.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/openinof/inof/cmd/inofctl/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Environ: os.Environ()})
	stop()
	os.Exit(code)
}
