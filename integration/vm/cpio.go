package vm

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// archive is an initramfs under construction: every entry by its path
// (relative, no leading slash). Parent directories are added as needed.
type archive struct {
	entries map[string]entry
}

// entry is one cpio member: a directory, a regular file or a symlink.
type entry struct {
	mode fs.FileMode // type bits and permissions
	data []byte      // file contents or symlink target
}

func newArchive() *archive { return &archive{entries: map[string]entry{}} }

// clean makes p relative and clean; it rejects paths that leave the root.
func clean(p string) (string, error) {
	c := path.Clean("/" + p)[1:]
	if c == "" || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") {
		return "", fmt.Errorf("cpio: bad path %q", p)
	}
	return c, nil
}

func (a *archive) dirs(p string) {
	for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
		if _, ok := a.entries[d]; !ok {
			a.entries[d] = entry{mode: fs.ModeDir | 0o755}
		}
	}
}

// File adds a regular file.
func (a *archive) File(p string, data []byte, perm fs.FileMode) error {
	c, err := clean(p)
	if err != nil {
		return err
	}
	a.dirs(c)
	a.entries[c] = entry{mode: perm.Perm(), data: data}
	return nil
}

// Symlink adds a symbolic link p → target.
func (a *archive) Symlink(p, target string) error {
	c, err := clean(p)
	if err != nil {
		return err
	}
	a.dirs(c)
	a.entries[c] = entry{mode: fs.ModeSymlink | 0o777, data: []byte(target)}
	return nil
}

// Dir adds an empty directory.
func (a *archive) Dir(p string) error {
	c, err := clean(p)
	if err != nil {
		return err
	}
	a.dirs(c)
	a.entries[c] = entry{mode: fs.ModeDir | 0o755}
	return nil
}

// Unix mode type bits of the newc format.
const (
	cpioDir     = 0o040000
	cpioFile    = 0o100000
	cpioSymlink = 0o120000
)

// WriteTo writes the archive in the cpio "newc" format the kernel unpacks,
// entries sorted by path (so parents come first), with fixed owners and
// times so equal contents give equal bytes.
func (a *archive) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	var n int64
	names := make([]string, 0, len(a.entries))
	for p := range a.entries {
		names = append(names, p)
	}
	slices.Sort(names)
	ino := 0
	for _, p := range names {
		e := a.entries[p]
		mode := uint32(e.mode.Perm())
		switch {
		case e.mode.IsDir():
			mode |= cpioDir
		case e.mode&fs.ModeSymlink != 0:
			mode |= cpioSymlink
		default:
			mode |= cpioFile
		}
		ino++
		m, err := writeMember(bw, p, mode, ino, e.data)
		n += m
		if err != nil {
			return n, err
		}
	}
	m, err := writeMember(bw, "TRAILER!!!", 0, 0, nil)
	n += m
	if err != nil {
		return n, err
	}
	return n, bw.Flush()
}

func writeMember(w *bufio.Writer, name string, mode uint32, ino int, data []byte) (int64, error) {
	nlink := 1
	if mode&cpioDir != 0 {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	var n int64
	for _, part := range [][]byte{[]byte(hdr), []byte(name), {0}, pad(len(hdr) + len(name) + 1), data, pad(len(data))} {
		m, err := w.Write(part)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// pad is the zero bytes that bring length n to a multiple of 4.
func pad(n int) []byte { return make([]byte, (4-n%4)%4) }
