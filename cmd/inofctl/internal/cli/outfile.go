package cli

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// outFile is a file inofctl writes: "-" is standard output; any other path
// is written through a temporary file beside it, created exclusively under
// a random name with the final mode (so nobody can plant it, or read it
// while it is being written), and renamed over the path once whole.
type outFile struct {
	io.Writer
	path string
	tmp  *os.File // nil for standard output
}

// createOutput opens path for writing with mode. An existing path is
// overwritten only with force or when the user says so (asked on
// standard error, the answer read from standard input).
func (a *app) createOutput(path string, mode os.FileMode, force bool) (*outFile, error) {
	if path == "-" {
		return &outFile{Writer: a.io.Out, path: path}, nil
	}
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return nil, fmt.Errorf("%s is a directory", path)
		}
		if !force {
			ok, err := askOverwrite(a.io.In, a.io.Err, path)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("%s exists: not overwritten (--force overwrites it)", path)
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	tmp, err := createExclusive(path, mode)
	if err != nil {
		return nil, err
	}
	return &outFile{Writer: tmp, path: path, tmp: tmp}, nil
}

// createExclusive creates a new file beside path, named after it with a
// random part, with O_EXCL (a file or link planted there fails it) and
// mode set before anything is written.
func createExclusive(path string, mode os.FileMode) (*os.File, error) {
	dir, base := filepath.Split(path)
	for range 100 {
		var r [8]byte
		if _, err := rand.Read(r[:]); err != nil {
			return nil, err
		}
		name := filepath.Join(dir, "."+base+"."+hex.EncodeToString(r[:])+".tmp")
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			// Named after the file asked for, not the temporary one.
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, fmt.Errorf("create %s: %w", path, err)
		}
		if err := f.Chmod(mode); err != nil { // the umask may have narrowed it
			f.Close()
			os.Remove(name)
			return nil, err
		}
		return f, nil
	}
	return nil, fmt.Errorf("%s: no free temporary name beside it", path)
}

// commit makes the written file the path: synced, renamed over it.
func (o *outFile) commit() error {
	if o.tmp == nil {
		return nil
	}
	name := o.tmp.Name()
	err := o.tmp.Sync()
	if cerr := o.tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, o.path)
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", o.path, err)
	}
	o.tmp = nil
	return nil
}

// abort drops what was written (after commit it does nothing).
func (o *outFile) abort() {
	if o.tmp != nil {
		o.tmp.Close()
		os.Remove(o.tmp.Name())
		o.tmp = nil
	}
}

// askOverwrite asks whether to overwrite path; no answer is no.
func askOverwrite(r io.Reader, w io.Writer, path string) (bool, error) {
	fmt.Fprintf(w, "%s exists. Overwrite it? [y/N] ", path)
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("read answer: %w", err)
	}
	if errors.Is(err, io.EOF) && line == "" {
		fmt.Fprintln(w)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
