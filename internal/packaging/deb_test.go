package packaging

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
)

// TestInstallDocs: a manual page's docs/X.md becomes the installed
// /usr/share/doc/PACKAGE/X.md and the document is added to the package,
// gzipped pages land under /usr/share/man, and a page naming a page no
// package ships stops the build.
func TestInstallDocs(t *testing.T) {
	pages := map[string][]byte{
		"man8/inofd.8":         []byte(".TH INOFD 8\nSIGHUP reloads (docs/operations.md, \"Reload\").\n.SH SEE ALSO\n\\fBinofd-restore(8)\\fP\n"),
		"man8/inofd-restore.8": []byte(".TH INOFD-RESTORE 8\n.SH SEE ALSO\n\\fBinofd(8)\\fP\n"),
	}
	shipped := map[string]bool{"man8/inofd.8": true, "man8/inofd-restore.8": true}
	read := func(rel string) ([]byte, error) {
		if rel == "docs/operations.md" {
			return []byte("# Operations\n"), nil
		}
		return nil, fs.ErrNotExist
	}
	p := pkg{name: "inofd"}
	if err := installDocs(&p, pages, []string{"man8/inofd-restore.8", "man8/inofd.8"}, shipped, read); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range p.files {
		files[f.path] = f.data
	}
	if string(files["/usr/share/doc/inofd/operations.md"]) != "# Operations\n" || len(files) != 3 {
		t.Fatalf("files %v", files)
	}
	z, err := gzip.NewReader(bytes.NewReader(files["/usr/share/man/man8/inofd.8.gz"]))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(z)
	if !strings.Contains(string(page), "(/usr/share/doc/inofd/operations.md, \"Reload\")") || strings.Contains(string(page), "docs/") {
		t.Fatalf("page:\n%s", page)
	}

	delete(shipped, "man8/inofd-restore.8")
	err = installDocs(&pkg{name: "inofd"}, pages, []string{"man8/inofd.8"}, shipped, read)
	if err == nil || !strings.Contains(err.Error(), "inofd-restore(8), which no package ships") {
		t.Fatalf("a page naming an unshipped page: %v", err)
	}
	pages["man8/inofd.8"] = []byte("see docs/missing.md\n")
	if err := installDocs(&pkg{name: "inofd"}, pages, []string{"man8/inofd.8"}, shipped, read); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a page naming a missing document: %v", err)
	}
}
