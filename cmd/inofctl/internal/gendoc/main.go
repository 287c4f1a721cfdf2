// Command gendoc writes docs/cli.md from inofctl's command tree
// (go generate ./cmd/inofctl).
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/openinof/inof/cmd/inofctl/internal/cli"
	"github.com/openinof/inof/cmd/inofctl/internal/clidoc"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendoc FILE")
		os.Exit(2)
	}
	var buf bytes.Buffer
	root := cli.NewCommand(cli.IO{In: bytes.NewReader(nil), Out: io.Discard, Err: io.Discard, Environ: clidoc.DocEnviron()})
	if err := clidoc.Markdown(root, &buf); err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[1], buf.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}
