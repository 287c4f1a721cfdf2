package clab

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/internal/rootfs"
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
	fs, err := imageRootFS(dir, opts.Busybox, strings.Fields(string(list)))
	if err != nil {
		return err
	}
	return fs.Import(ctx, opts.Docker, opts.Tag,
		"ENV PATH=/usr/sbin:/usr/bin:/bin",
		"ENV FAKE_NVME_DIR="+StateDir+"/nvme",
		`CMD ["/bin/sh"]`)
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

// imageRootFS lays out the image's root file system: busybox and its
// applets, the binaries from binDir, the fake nvme-cli, a root user.
func imageRootFS(binDir, busybox string, applets []string) (*rootfs.FS, error) {
	fs := rootfs.New()
	for _, d := range []string{"bin/", "etc/", "usr/", "usr/bin/", "usr/sbin/", "var/", "var/lib/", "var/lib/inof/", "run/", "run/inof/"} {
		fs.Dir(d, 0o755)
	}
	fs.Dir("tmp/", 0o1777)
	fs.Dir("root/", 0o700)
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return nil, fmt.Errorf("clab: %w", err)
	}
	fs.File("bin/busybox", 0o755, bb)
	for _, a := range applets {
		if a != "busybox" && !strings.Contains(a, "/") {
			fs.Symlink("bin/"+a, "busybox")
		}
	}
	for _, b := range binaries {
		body, err := os.ReadFile(filepath.Join(binDir, b))
		if err != nil {
			return nil, fmt.Errorf("clab: %w", err)
		}
		fs.File("usr/bin/"+b, 0o755, body)
	}
	fs.File(strings.TrimPrefix(fakeNVMePath, "/"), 0o755, []byte(topo.FakeNVMeScript()))
	fs.File("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\n"))
	fs.File("etc/group", 0o644, []byte("root:x:0:\n"))
	return fs, nil
}
