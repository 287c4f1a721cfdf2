// Command mkpkg builds the Debian packages (make package), the inofd
// container image (make image) or the switch agent's SONiC application
// extension (make sonic-image) from the repository it runs in.
//
//	go run ./internal/packaging/mkpkg deb [-out DIR] [-version V]
//	go run ./internal/packaging/mkpkg image [-tag TAG] [-sonic]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/openinof/inof/internal/packaging"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	switch os.Args[1] {
	case "deb":
		out := fs.String("out", "dist", "directory for the .deb files")
		version := fs.String("version", "", "package version (default: from git)")
		fs.Parse(os.Args[2:])
		debs, err := packaging.Build(ctx, packaging.Options{Out: *out, Version: *version})
		if err != nil {
			fail(err)
		}
		for _, d := range debs {
			fmt.Println(d)
		}
	case "image":
		tag := fs.String("tag", "", "image tag (default "+packaging.DefaultImage+", with -sonic "+packaging.DefaultSONiCImage+")")
		sonic := fs.Bool("sonic", false, "the SONiC application extension of the switch agent")
		fs.Parse(os.Args[2:])
		if *tag == "" {
			*tag = packaging.DefaultImage
			if *sonic {
				*tag = packaging.DefaultSONiCImage
			}
		}
		if err := packaging.BuildImage(ctx, packaging.ImageOptions{Tag: *tag, SONiC: *sonic}); err != nil {
			fail(err)
		}
		fmt.Println(*tag)
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: mkpkg deb [-out DIR] [-version V] | mkpkg image [-tag TAG] [-sonic]")
	os.Exit(2)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mkpkg:", err)
	os.Exit(1)
}
