// Package rootfs builds a container's root file system as a tar stream in
// memory and turns it into an image with `docker import`, so the project's
// images need neither a registry nor a base image.
package rootfs

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"time"
)

// FS is a root file system being written. Its methods remember the first
// error; Import reports it.
type FS struct {
	buf bytes.Buffer
	tw  *tar.Writer
	now time.Time
	err error
}

// New starts an empty root file system; every entry gets the current time.
func New() *FS {
	f := &FS{now: time.Now()}
	f.tw = tar.NewWriter(&f.buf)
	return f
}

func (f *FS) header(h *tar.Header) bool {
	if f.err != nil {
		return false
	}
	h.ModTime, h.Format = f.now, tar.FormatPAX
	if err := f.tw.WriteHeader(h); err != nil {
		f.err = fmt.Errorf("rootfs: %s: %w", h.Name, err)
		return false
	}
	return true
}

// Dir adds a directory; name ends with a slash ("usr/bin/").
func (f *FS) Dir(name string, mode int64) {
	f.header(&tar.Header{Name: name, Mode: mode, Typeflag: tar.TypeDir})
}

// File adds a regular file.
func (f *FS) File(name string, mode int64, body []byte) {
	if f.header(&tar.Header{Name: name, Mode: mode, Size: int64(len(body)), Typeflag: tar.TypeReg}) {
		if _, err := f.tw.Write(body); err != nil {
			f.err = fmt.Errorf("rootfs: %s: %w", name, err)
		}
	}
}

// Symlink adds a symbolic link name → target.
func (f *FS) Symlink(name, target string) {
	f.header(&tar.Header{Name: name, Linkname: target, Mode: 0o777, Typeflag: tar.TypeSymlink})
}

// Tar ends the file system and returns its tar stream.
func (f *FS) Tar() ([]byte, error) {
	if f.err != nil {
		return nil, f.err
	}
	if err := f.tw.Close(); err != nil {
		return nil, fmt.Errorf("rootfs: %w", err)
	}
	return f.buf.Bytes(), nil
}

// Import ends the file system and imports it as image tag with the docker
// command given, each change a Dockerfile instruction (`docker import
// --change`: ENV, CMD, ENTRYPOINT, LABEL, …).
func (f *FS) Import(ctx context.Context, docker, tag string, changes ...string) error {
	body, err := f.Tar()
	if err != nil {
		return err
	}
	args := []string{"import"}
	for _, c := range changes {
		args = append(args, "--change", c)
	}
	cmd := exec.CommandContext(ctx, docker, append(args, "-", tag)...)
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("rootfs: docker import %s: %w\n%s", tag, err, out)
	}
	return nil
}
