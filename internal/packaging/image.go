package packaging

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// DefaultImage is the tag `make image` gives the inofd image.
const DefaultImage = "inof/inofd:latest"

// ImageOptions configure BuildImage.
type ImageOptions struct {
	// Tag is the image's tag; empty means DefaultImage.
	Tag string
	// Root is the module's directory; empty: the current directory.
	Root string
	// Go and Docker are the commands run; empty: "go" and "docker".
	Go, Docker string
}

// BuildImage builds the inofd container image without a registry or a
// base image: inofd and inofctl, static, with the example configurations
// under /etc/inof and the directories the units would make (state under
// /var/lib, the API socket's under /run), packed into a root file system
// that `docker import` turns into an image whose entrypoint is inofd.
// docs/operations.md, "Container image", shows docker run and
// containerlab use.
func BuildImage(ctx context.Context, o ImageOptions) error {
	if o.Tag == "" {
		o.Tag = DefaultImage
	}
	if o.Root == "" {
		o.Root = "."
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Docker == "" {
		o.Docker = "docker"
	}
	work, err := os.MkdirTemp("", "inof-image-")
	if err != nil {
		return fmt.Errorf("packaging: %w", err)
	}
	defer os.RemoveAll(work)
	bins, err := buildBinaries(ctx, Options{Root: o.Root, Go: o.Go, Arch: debianArch(runtime.GOARCH)}, work)
	if err != nil {
		return err
	}
	version, err := Version(ctx, o.Root)
	if err != nil {
		return err
	}
	var rootfs bytes.Buffer
	fs := newRootFS(&rootfs)
	for _, d := range []string{"usr/", "usr/bin/", "etc/", "etc/inof/", "var/", "var/lib/", "run/"} {
		fs.dir(d, 0o755)
	}
	for _, d := range []string{"var/lib/inofd-reflector/", "var/lib/inofd-switch/", "run/inofd/", "run/inofd-switch/"} {
		fs.dir(d, 0o700)
	}
	fs.dir("tmp/", 0o1777)
	fs.file("usr/bin/inofd", 0o755, bins["inofd"])
	fs.file("usr/bin/inofctl", 0o755, bins["inofctl"])
	for _, c := range []string{"inofd-reflector.yaml", "inofd-switch.yaml"} {
		body, err := os.ReadFile(filepath.Join(o.Root, "docs", "deploy", c))
		if err != nil {
			return fmt.Errorf("packaging: %w", err)
		}
		fs.file("etc/inof/"+c, 0o644, body)
	}
	fs.file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/usr/sbin/nologin\n"))
	fs.file("etc/group", 0o644, []byte("root:x:0:\n"))
	if err := fs.close(); err != nil {
		return err
	}
	imp := exec.CommandContext(ctx, o.Docker, "import",
		"--change", `ENTRYPOINT ["/usr/bin/inofd"]`,
		"--change", "ENV INOF_LOG_FORMAT=json",
		"--change", "LABEL org.opencontainers.image.title=inofd org.opencontainers.image.version="+version+
			" org.opencontainers.image.source=https://github.com/openinof/inof",
		"-", o.Tag)
	imp.Stdin = &rootfs
	if out, err := imp.CombinedOutput(); err != nil {
		return fmt.Errorf("packaging: docker import %s: %w\n%s", o.Tag, err, out)
	}
	return nil
}

// rootFS writes a root file system as a tar stream, remembering the
// first error.
type rootFS struct {
	tw  *tar.Writer
	now time.Time
	err error
}

func newRootFS(buf *bytes.Buffer) *rootFS { return &rootFS{tw: tar.NewWriter(buf), now: time.Now()} }

func (r *rootFS) header(h *tar.Header) bool {
	if r.err != nil {
		return false
	}
	h.ModTime, h.Format = r.now, tar.FormatPAX
	if err := r.tw.WriteHeader(h); err != nil {
		r.err = fmt.Errorf("packaging: image %s: %w", h.Name, err)
		return false
	}
	return true
}

func (r *rootFS) dir(name string, mode int64) {
	r.header(&tar.Header{Name: name, Mode: mode, Typeflag: tar.TypeDir})
}

func (r *rootFS) file(name string, mode int64, body []byte) {
	if r.header(&tar.Header{Name: name, Mode: mode, Size: int64(len(body)), Typeflag: tar.TypeReg}) {
		if _, err := r.tw.Write(body); err != nil {
			r.err = fmt.Errorf("packaging: image %s: %w", name, err)
		}
	}
}

func (r *rootFS) close() error {
	if r.err != nil {
		return r.err
	}
	if err := r.tw.Close(); err != nil {
		return fmt.Errorf("packaging: image: %w", err)
	}
	return nil
}
