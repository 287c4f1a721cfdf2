package clab

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/openinof/inof/integration/topo"
)

// fakeNVMePath is where the image keeps topo's fake nvme-cli; it logs to
// $FAKE_NVME_DIR, which the image sets to StateDir/nvme.
const fakeNVMePath = "/usr/sbin/nvme"

// module is the import path the binaries are built from.
const module = "github.com/openinof/inof"

// binaries are the commands the image carries, under /usr/bin.
var binaries = []string{"inofd", "inof-host", "inofctl"}

// ImageOptions configures BuildImage.
type ImageOptions struct {
	// Tag is the image's tag; empty means DefaultImage.
	Tag string
	// Busybox is a statically linked busybox (sh, ip, wget, …); empty means
	// /bin/busybox, which Debian's busybox-static installs.
	Busybox string
	// Go and Docker are the commands run; empty means "go" and "docker"
	// from PATH.
	Go, Docker string
}

// BuildImage builds the lab's node image without a registry: inofd,
// inof-host and inofctl built with CGO_ENABLED=0 from the module that
// holds the working directory, busybox with a link for each applet, and
// the namespace harness's fake nvme-cli as /usr/sbin/nvme, packed into a
// root file system that `docker import` turns into the image.
func BuildImage(ctx context.Context, opts ImageOptions) error {
	if opts.Tag == "" {
		opts.Tag = DefaultImage
	}
	if opts.Busybox == "" {
		opts.Busybox = "/bin/busybox"
	}
	if opts.Go == "" {
		opts.Go = "go"
	}
	if opts.Docker == "" {
		opts.Docker = "docker"
	}
	if err := requireStatic(opts.Busybox); err != nil {
		return fmt.Errorf("clab: busybox: %w (Debian: apt-get install busybox-static)", err)
	}
	dir, err := os.MkdirTemp("", "inof-clab-image-")
	if err != nil {
		return fmt.Errorf("clab: %w", err)
	}
	defer os.RemoveAll(dir)
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, b := range binaries {
		args = append(args, module+"/cmd/"+b)
	}
	build := exec.CommandContext(ctx, opts.Go, args...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("clab: go build: %w\n%s", err, out)
	}
	list, err := exec.CommandContext(ctx, opts.Busybox, "--list").Output()
	if err != nil {
		return fmt.Errorf("clab: %s --list: %w", opts.Busybox, err)
	}
	var rootfs bytes.Buffer
	if err := packRootFS(&rootfs, dir, opts.Busybox, strings.Fields(string(list))); err != nil {
		return err
	}
	imp := exec.CommandContext(ctx, opts.Docker, "import",
		"--change", "ENV PATH=/usr/sbin:/usr/bin:/bin",
		"--change", "ENV FAKE_NVME_DIR="+StateDir+"/nvme",
		"--change", `CMD ["/bin/sh"]`,
		"-", opts.Tag)
	imp.Stdin = &rootfs
	if out, err := imp.CombinedOutput(); err != nil {
		return fmt.Errorf("clab: docker import %s: %w\n%s", opts.Tag, err, out)
	}
	return nil
}

// requireStatic fails unless path is an ELF executable without an
// interpreter (a static binary runs in an image FROM scratch).
func requireStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked", path)
		}
	}
	return nil
}

// packRootFS writes the image's root file system as a tar stream.
func packRootFS(buf *bytes.Buffer, binDir, busybox string, applets []string) error {
	tw := tar.NewWriter(buf)
	now := time.Now()
	hdr := func(h *tar.Header) error {
		h.ModTime, h.Format = now, tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("clab: image %s: %w", h.Name, err)
		}
		return nil
	}
	file := func(name string, mode int64, body []byte) error {
		if err := hdr(&tar.Header{Name: name, Mode: mode, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	for _, d := range []struct {
		name string
		mode int64
	}{{"bin/", 0o755}, {"etc/", 0o755}, {"usr/", 0o755}, {"usr/bin/", 0o755}, {"usr/sbin/", 0o755},
		{"var/", 0o755}, {"var/lib/", 0o755}, {"var/lib/inof/", 0o755}, {"run/", 0o755}, {"run/inof/", 0o755}, {"tmp/", 0o1777}, {"root/", 0o700}} {
		if err := hdr(&tar.Header{Name: d.name, Mode: d.mode, Typeflag: tar.TypeDir}); err != nil {
			return err
		}
	}
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return fmt.Errorf("clab: %w", err)
	}
	if err := file("bin/busybox", 0o755, bb); err != nil {
		return err
	}
	for _, a := range applets {
		if a == "busybox" || strings.Contains(a, "/") {
			continue
		}
		if err := hdr(&tar.Header{Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, Typeflag: tar.TypeSymlink}); err != nil {
			return err
		}
	}
	for _, b := range binaries {
		body, err := os.ReadFile(filepath.Join(binDir, b))
		if err != nil {
			return fmt.Errorf("clab: %w", err)
		}
		if err := file("usr/bin/"+b, 0o755, body); err != nil {
			return err
		}
	}
	if err := file(strings.TrimPrefix(fakeNVMePath, "/"), 0o755, []byte(topo.FakeNVMeScript())); err != nil {
		return err
	}
	if err := file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\n")); err != nil {
		return err
	}
	if err := file("etc/group", 0o644, []byte("root:x:0:\n")); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("clab: image: %w", err)
	}
	return nil
}
