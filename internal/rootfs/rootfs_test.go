package rootfs

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestTar: what Dir, File and Symlink add comes back from the tar stream
// in order, with its mode, body and link target.
func TestTar(t *testing.T) {
	fs := New()
	fs.Dir("usr/bin/", 0o755)
	fs.File("usr/bin/tool", 0o755, []byte("#!/bin/sh\n"))
	fs.Symlink("bin/sh", "busybox")
	fs.Dir("tmp/", 0o1777)
	body, err := fs.Tar()
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		name, link, body string
		mode             int64
		kind             byte
	}
	want := []entry{
		{name: "usr/bin/", mode: 0o755, kind: tar.TypeDir},
		{name: "usr/bin/tool", mode: 0o755, kind: tar.TypeReg, body: "#!/bin/sh\n"},
		{name: "bin/sh", link: "busybox", mode: 0o777, kind: tar.TypeSymlink},
		{name: "tmp/", mode: 0o1777, kind: tar.TypeDir},
	}
	tr := tar.NewReader(bytes.NewReader(body))
	for i := 0; ; i++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if i != len(want) {
				t.Fatalf("%d entries, want %d", i, len(want))
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		got := entry{name: h.Name, link: h.Linkname, body: string(b), mode: h.Mode, kind: h.Typeflag}
		if i >= len(want) || got != want[i] {
			t.Fatalf("entry %d: %+v", i, got)
		}
		if h.ModTime.IsZero() {
			t.Fatalf("entry %d has no time", i)
		}
	}
}

// TestFirstErrorKept: an entry the tar writer refuses (a name with a NUL
// byte) makes Tar and Import fail with that error, without running docker.
func TestFirstErrorKept(t *testing.T) {
	fs := New()
	fs.File("bad\x00name", 0o644, nil)
	fs.File("ok", 0o644, []byte("a"))
	if _, err := fs.Tar(); err == nil || !strings.Contains(err.Error(), "rootfs:") {
		t.Fatalf("Tar: %v", err)
	}
	if err := fs.Import(t.Context(), "/nonexistent/docker", "x:y"); err == nil || !strings.Contains(err.Error(), "rootfs:") ||
		strings.Contains(err.Error(), "docker import") {
		t.Fatalf("Import: %v, want the first error, docker not run", err)
	}
}
