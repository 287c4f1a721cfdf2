package vm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestArchiveCpio writes an archive and reads it back with GNU cpio: every
// member, its type and its contents survive, parents come before children.
func TestArchiveCpio(t *testing.T) {
	cpio, err := exec.LookPath("cpio")
	switch {
	case err != nil && os.Getenv("CI") != "":
		t.Fatal("cpio not installed; .ci/run installs it (apt-get install cpio)")
	case err != nil:
		t.Skip("cpio not installed (apt-get install cpio)")
	}
	a := newArchive()
	if err := a.File("bin/tool", []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	a.Symlink("usr/bin/alias", "/bin/tool")
	a.Dir("proc")
	a.File("etc/odd", []byte("x"), 0o600) // length 1: padding
	if err := a.File("../escape", nil, 0o644); err == nil {
		t.Error("a path leaving the root was accepted")
	}
	var buf bytes.Buffer
	if _, err := a.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if buf.Len()%4 != 0 {
		t.Errorf("archive length %d is not a multiple of 4", buf.Len())
	}
	cmd := exec.Command(cpio, "-itv", "--quiet")
	cmd.Stdin = bytes.NewReader(buf.Bytes())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cpio -it: %v\n%s", err, out)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		names = append(names, f[0][:1]+" "+strings.Join(f[8:], " "))
	}
	want := []string{"d bin", "- bin/tool", "d etc", "- etc/odd", "d proc", "d usr", "d usr/bin", "l usr/bin/alias -> /bin/tool"}
	if strings.Join(names, "\n") != strings.Join(want, "\n") {
		t.Errorf("cpio lists\n%s\nwant\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
	dir := t.TempDir()
	cmd = exec.Command(cpio, "-id", "--quiet")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(buf.Bytes())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cpio -id: %v\n%s", err, out)
	}
	if got, err := exec.Command("sh", dir+"/bin/tool").Output(); err != nil || string(got) != "hi\n" {
		t.Errorf("extracted tool ran: %q, %v", got, err)
	}
}

func TestLddPaths(t *testing.T) {
	out := "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibnvme.so.1 => /lib/x86_64-linux-gnu/libnvme.so.1 (0x00007f)\n" +
		"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n"
	got := strings.Join(lddPaths(out), " ")
	want := "/lib/x86_64-linux-gnu/libnvme.so.1 /lib/x86_64-linux-gnu/libc.so.6 /lib64/ld-linux-x86-64.so.2"
	if got != want {
		t.Errorf("lddPaths = %q, want %q", got, want)
	}
}

// TestPruneKeepsNewest: prune leaves the newest images and any build in
// progress, and removes the rest.
func TestPruneKeepsNewest(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().Add(-time.Hour)
	for i := range 6 {
		d := filepath.Join(dir, fmt.Sprintf("img-%d", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		at := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(d, at, at); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(dir, "img-tmp-1"), 0o755)
	(&builder{opts: ImageOptions{CacheDir: dir}}).prune(4)
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if got, want := strings.Join(left, " "), "img-2 img-3 img-4 img-5 img-tmp-1"; got != want {
		t.Errorf("after prune: %s, want %s", got, want)
	}
}
