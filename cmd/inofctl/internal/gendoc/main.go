// Command gendoc writes inofctl's documentation from its command tree:
// docs/cli.md (go generate ./cmd/inofctl), or with -man DIR one manual page
// per command (section 1) for the Debian package (make package).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra/doc"

	"github.com/openinof/inof/cmd/inofctl/internal/cli"
	"github.com/openinof/inof/cmd/inofctl/internal/clidoc"
	"github.com/openinof/inof/internal/buildinfo"
)

func main() {
	man := flag.String("man", "", "write manual pages (section 1) into this directory instead")
	flag.Usage = func() { fmt.Fprintln(os.Stderr, "usage: gendoc FILE | gendoc -man DIR") }
	flag.Parse()
	root := cli.NewCommand(cli.IO{In: bytes.NewReader(nil), Out: io.Discard, Err: io.Discard, Environ: clidoc.DocEnviron()})
	if *man != "" {
		root.DisableAutoGenTag = true
		if err := os.MkdirAll(*man, 0o755); err != nil {
			fail(err)
		}
		hdr := &doc.GenManHeader{Section: "1", Source: "inof " + buildinfo.Read().Version, Manual: "iNOF fabric control plane"}
		if err := doc.GenManTree(root, hdr, *man); err != nil {
			fail(err)
		}
		return
	}
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	var buf bytes.Buffer
	if err := clidoc.Markdown(root, &buf); err != nil {
		fail(err)
	}
	if err := os.WriteFile(flag.Arg(0), buf.Bytes(), 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gendoc:", err)
	os.Exit(1)
}
