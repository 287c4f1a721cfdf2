package vm

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ImageOptions says where the guest image is cached and which kernel it
// boots.
type ImageOptions struct {
	// CacheDir holds downloaded kernel packages, unpacked kernels and built
	// images. Empty means $INOF_VM_CACHE, else /var/cache/inof-vm.
	CacheDir string
	// KernelPackage is the Debian kernel package (not installed, only
	// unpacked). Empty means $INOF_VM_KERNEL, else the newest
	// linux-image-6.1.0-N-cloud-amd64-unsigned that apt knows (or, offline,
	// that the cache holds).
	KernelPackage string
	// Log, when set, gets one line per slow step (download, unpack, build).
	Log func(format string, args ...any)
	// Fabric adds what a whole fabric inside one guest needs (PathFabric):
	// a static inofd (GuestInofd), inofctl (GuestInofctl, the zoning
	// admin's tool) and iproute2's ip (GuestIP, for network namespaces;
	// busybox's ip has none), with the libraries ldd lists.
	// Such an image is cached apart from the plain one.
	Fabric bool
}

// Image is a bootable guest: a kernel and an initramfs holding busybox,
// nvme-cli with its libraries, the kernel modules, the guest init and a
// static inof-host.
type Image struct {
	Kernel string // path of vmlinuz
	Initrd string // path of initrd.gz
	// Key is the SHA-256 of every input (kernel, archive contents); the
	// image lives in CacheDir/img-KEY and is rebuilt when an input changes.
	Key string
	// KernelRelease is uname -r of the guest, e.g. 6.1.0-57-cloud-amd64.
	KernelRelease string
	// KernelPackage is the .deb the kernel came from.
	KernelPackage string
	// CPU is qemu's -cpu model for this kernel; empty is qemu's default.
	CPU string
	// Fabric says the image holds inofd and iproute2's ip
	// (ImageOptions.Fabric).
	Fabric bool
}

// cpuModel is the -cpu a kernel release needs under qemu 7.2's TCG. Linux
// 6.12 dies at boot on the default model (a double fault in SLUB's
// cmpxchg16b fast path, every boot); without CX16 it takes the other path
// and boots. 6.1 keeps the default, on which every figure of
// docs/realhost.md before 6.12 was measured.
func cpuModel(release string) string {
	if strings.HasPrefix(release, "6.1.") {
		return ""
	}
	return "qemu64,-cx16"
}

// module is this repository's Go module; the image holds its inof-host.
const module = "github.com/openinof/inof"

// imageFormat changes when the image layout changes, so old cached images
// are not reused.
const imageFormat = "inof-vm-image-1"

// guestModules are the kernel modules the guest loads, in insmod order,
// relative to lib/modules/REL/kernel, with their parameters. nvme-core
// (with native multipath) is built into the Debian cloud kernel.
var guestModules = []struct{ path, params string }{
	{"drivers/virtio/virtio_ring.ko", ""},
	{"drivers/virtio/virtio.ko", ""},
	{"drivers/virtio/virtio_pci_modern_dev.ko", ""},
	{"drivers/virtio/virtio_pci_legacy_dev.ko", ""},
	{"drivers/virtio/virtio_pci.ko", ""},
	{"net/core/failover.ko", ""},
	{"drivers/net/net_failover.ko", ""},
	{"drivers/net/virtio_net.ko", ""},
	{"drivers/char/virtio_console.ko", ""},
	{"fs/configfs/configfs.ko", ""},
	{"drivers/nvme/host/nvme-fabrics.ko", ""},
	{"drivers/nvme/host/nvme-tcp.ko", ""},
	{"drivers/nvme/target/nvmet.ko", ""},
	{"drivers/nvme/target/nvmet-tcp.ko", ""},
	{"drivers/block/loop.ko", ""},
	{"drivers/block/null_blk/null_blk.ko", "nr_devices=1 gb=1"},
	// inet_diag with tcp_diag lets the host agent abort a dead path's TCP
	// connections (SOCK_DESTROY) so nvme-tcp starts error recovery at once.
	{"net/ipv4/inet_diag.ko", ""},
	{"net/ipv4/tcp_diag.ko", ""},
	// A whole fabric in one guest (PathFabric): veth links, a bridge per
	// switch, and brd (RAM disks that keep what is written).
	{"drivers/net/veth.ko", ""},
	{"net/llc/llc.ko", ""},
	{"net/802/stp.ko", ""},
	{"net/bridge/bridge.ko", ""},
	{"drivers/block/brd.ko", "rd_nr=1 rd_size=65536"},
}

// Guest paths of what the image adds besides busybox and nvme-cli.
const (
	// GuestInofHost is the static inof-host in the guest.
	GuestInofHost = "/bin/inof-host"
	// GuestIOStall is the I/O stall meter (see Guest.StartIOStall).
	GuestIOStall = "/bin/iostall"
	// GuestSockKill aborts TCP connections: sockkill [-syn] SRC DST PORT
	// (internal/sockdiag's SOCK_DESTROY).
	GuestSockKill = "/bin/sockkill"
	// GuestNVMe is nvme-cli in the guest.
	GuestNVMe = "/usr/sbin/nvme"
	// GuestInofd is the static inofd of a Fabric image.
	GuestInofd = "/bin/inofd"
	// GuestInofctl is the static inofctl of a Fabric image.
	GuestInofctl = "/bin/inofctl"
	// GuestIP is iproute2's ip in a Fabric image (busybox's is /bin/ip).
	GuestIP = "/usr/sbin/ip"
	// GuestCuts is the guest-time link cut runner (see PathFabric.Cuts).
	GuestCuts = "/bin/cuts"
)

// BuildImage returns the guest image for opts, building what the cache
// lacks: it downloads the kernel package with apt-get download, unpacks it,
// builds inof-host and the guest init (CGO_ENABLED=0) and writes the
// initramfs. Concurrent callers (several test binaries) serialise on a lock
// file in the cache. ctx bounds the whole call.
func BuildImage(ctx context.Context, opts ImageOptions) (Image, error) {
	if opts.CacheDir == "" {
		opts.CacheDir = os.Getenv("INOF_VM_CACHE")
	}
	if opts.CacheDir == "" {
		opts.CacheDir = "/var/cache/inof-vm"
	}
	if opts.Log == nil {
		opts.Log = func(string, ...any) {}
	}
	if err := os.MkdirAll(opts.CacheDir, 0o755); err != nil {
		return Image{}, fmt.Errorf("vm: cache: %w", err)
	}
	unlock, err := lockDir(opts.CacheDir)
	if err != nil {
		return Image{}, err
	}
	defer unlock()
	b := &builder{ctx: ctx, opts: opts}
	return b.build()
}

// lockDir takes an exclusive flock on DIR/lock.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("vm: cache lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("vm: cache lock: %w", err)
	}
	return func() { f.Close() }, nil
}

type builder struct {
	ctx  context.Context
	opts ImageOptions
}

func (b *builder) run(dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(b.ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("vm: %s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func (b *builder) build() (Image, error) {
	deb, pkg, err := b.kernelDeb()
	if err != nil {
		return Image{}, err
	}
	kdir, err := b.unpack(deb)
	if err != nil {
		return Image{}, err
	}
	rels, err := os.ReadDir(filepath.Join(kdir, "lib", "modules"))
	if err != nil || len(rels) != 1 {
		return Image{}, fmt.Errorf("vm: %s: want one lib/modules/RELEASE (%v)", kdir, err)
	}
	rel := rels[0].Name()
	kernel, err := os.ReadFile(filepath.Join(kdir, "boot", "vmlinuz-"+rel))
	if err != nil {
		return Image{}, fmt.Errorf("vm: kernel: %w", err)
	}
	a, err := b.archive(kdir, rel)
	if err != nil {
		return Image{}, err
	}
	var cpio bytes.Buffer
	if _, err := a.WriteTo(&cpio); err != nil {
		return Image{}, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\nfabric=%t\n", imageFormat, pkg, b.opts.Fabric)
	h.Write(kernel)
	h.Write(cpio.Bytes())
	key := hex.EncodeToString(h.Sum(nil))[:16]
	img := Image{Key: key, KernelRelease: rel, KernelPackage: filepath.Base(deb), CPU: cpuModel(rel), Fabric: b.opts.Fabric}
	dir := filepath.Join(b.opts.CacheDir, "img-"+key)
	img.Kernel, img.Initrd = filepath.Join(dir, "vmlinuz"), filepath.Join(dir, "initrd.gz")
	if _, err := os.Stat(img.Initrd); err == nil {
		return img, nil
	}
	b.opts.Log("vm: writing image %s (%d bytes unpacked)", dir, cpio.Len())
	tmp, err := os.MkdirTemp(b.opts.CacheDir, "img-tmp-")
	if err != nil {
		return Image{}, err
	}
	defer os.RemoveAll(tmp)
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	zw.Write(cpio.Bytes())
	if err := zw.Close(); err != nil {
		return Image{}, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "initrd.gz"), gz.Bytes(), 0o644); err != nil {
		return Image{}, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "vmlinuz"), kernel, 0o644); err != nil {
		return Image{}, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return Image{}, fmt.Errorf("vm: image: %w", err)
	}
	b.prune(keepImages)
	return img, nil
}

// keepImages is how many built images the cache keeps (newest first);
// every change of inof-host makes a new one. Two kernels, each plain and
// Fabric, are four.
const keepImages = 6

// prune removes all but the newest keep images of the cache.
func (b *builder) prune(keep int) {
	dirs, _ := filepath.Glob(filepath.Join(b.opts.CacheDir, "img-*"))
	type aged struct {
		dir string
		mod int64
	}
	var imgs []aged
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() && !strings.HasPrefix(filepath.Base(d), "img-tmp-") {
			imgs = append(imgs, aged{d, st.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(imgs, func(x, y aged) int { return cmp.Compare(y.mod, x.mod) })
	for i := keep; i < len(imgs); i++ {
		os.RemoveAll(imgs[i].dir)
	}
}

// kernelPattern matches the kernel packages BuildImage picks from.
var kernelPattern = regexp.MustCompile(`^linux-image-6\.1\.0-([0-9]+)-cloud-amd64-unsigned$`)

// kernelDeb returns the cached .deb of the kernel package, downloading it
// when the cache has none.
func (b *builder) kernelDeb() (deb, pkg string, err error) {
	debs := filepath.Join(b.opts.CacheDir, "debs")
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return "", "", err
	}
	pkg = b.opts.KernelPackage
	if pkg == "" {
		pkg = os.Getenv("INOF_VM_KERNEL")
	}
	if pkg == "" {
		if pkg, err = b.newestKernel(debs); err != nil {
			return "", "", err
		}
	}
	var apt []string // apt options: the system's sources, or bookworm-backports
	if pkg == BackportsKernel {
		if apt, err = b.backports(); err != nil {
			return "", "", err
		}
		if pkg, err = b.newestBackports(apt, debs); err != nil {
			return "", "", err
		}
	} else if strings.Contains(pkg, "~bpo") || strings.Contains(pkg, "+deb12-") {
		if apt, err = b.backports(); err != nil {
			return "", "", err
		}
	}
	if m, _ := filepath.Glob(filepath.Join(debs, pkg+"_*.deb")); len(m) > 0 {
		slices.Sort(m)
		return m[len(m)-1], pkg, nil
	}
	b.opts.Log("vm: apt-get download %s", pkg)
	tmp, err := os.MkdirTemp(debs, "dl-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	if _, err := b.run(tmp, nil, "apt-get", append(apt, "download", pkg)...); err != nil {
		return "", "", err
	}
	m, _ := filepath.Glob(filepath.Join(tmp, pkg+"_*.deb"))
	if len(m) != 1 {
		return "", "", fmt.Errorf("vm: apt-get download %s left %d .deb files", pkg, len(m))
	}
	deb = filepath.Join(debs, filepath.Base(m[0]))
	return deb, pkg, os.Rename(m[0], deb)
}

// BackportsKernel as ImageOptions.KernelPackage (or INOF_VM_KERNEL) picks the
// newest Linux 6.12 cloud kernel of Debian's bookworm-backports suite.
const BackportsKernel = "backports"

// EnvKernels returns the guest kernels INOF_VM_KERNELS names
// (comma-separated packages; "default" is the newest 6.1, "backports" the
// newest 6.12 of bookworm-backports), else both; "" stands for the default.
func EnvKernels() []string {
	s := os.Getenv("INOF_VM_KERNELS")
	if s == "" {
		s = "default," + BackportsKernel
	}
	var ks []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k == "default" {
			k = ""
		}
		ks = append(ks, k)
	}
	return ks
}

// backportsPattern matches bookworm-backports' 6.12 cloud kernels.
var backportsPattern = regexp.MustCompile(`^linux-image-6\.12\.([0-9]+)\+deb12-cloud-amd64-unsigned$`)

// backports returns apt options that see bookworm and bookworm-backports
// through package lists of the cache's own (CacheDir/apt-backports), so
// the host's apt sources stay as they are; the lists are fetched once a day.
func (b *builder) backports() ([]string, error) {
	dir := filepath.Join(b.opts.CacheDir, "apt-backports")
	parts, lists := filepath.Join(dir, "sources"), filepath.Join(dir, "lists")
	if err := os.MkdirAll(filepath.Join(lists, "partial"), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(parts, 0o755); err != nil {
		return nil, err
	}
	src := "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-backports\n" +
		"Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
	if err := os.WriteFile(filepath.Join(parts, "backports.sources"), []byte(src), 0o644); err != nil {
		return nil, err
	}
	opts := []string{"-o", "Dir::Etc::SourceList=/dev/null", "-o", "Dir::Etc::SourceParts=" + parts,
		"-o", "Dir::State::Lists=" + lists}
	stamp := filepath.Join(dir, "updated")
	if st, err := os.Stat(stamp); err == nil && time.Since(st.ModTime()) < 24*time.Hour {
		return opts, nil
	}
	b.opts.Log("vm: apt-get update (bookworm-backports lists in %s)", lists)
	if _, err := b.run("", nil, "apt-get", append(opts, "update")...); err != nil {
		return nil, err
	}
	return opts, os.WriteFile(stamp, nil, 0o644)
}

// newestBackports is the newest 6.12 cloud kernel of bookworm-backports,
// else the newest such package in the cache.
func (b *builder) newestBackports(apt []string, debs string) (string, error) {
	if best := b.newest(apt, backportsPattern, debs); best != "" {
		return best, nil
	}
	return "", fmt.Errorf("vm: no linux-image-6.12.N+deb12-cloud-amd64-unsigned in bookworm-backports nor in %s", debs)
}

// newestKernel is the newest cloud kernel package apt knows, else the
// newest in the cache.
func (b *builder) newestKernel(debs string) (string, error) {
	if best := b.newest(nil, kernelPattern, debs); best != "" {
		return best, nil
	}
	return "", fmt.Errorf("vm: no linux-image-6.1.0-N-cloud-amd64-unsigned known to apt-cache nor in %s (apt-get update? or set INOF_VM_KERNEL)", debs)
}

// newest is the package matching pattern (its first group numbers the
// release) with the highest number among those apt-cache (with the apt
// options) and the cached .debs know; "" if none.
func (b *builder) newest(apt []string, pattern *regexp.Regexp, debs string) string {
	var names []string
	if out, err := b.run("", nil, "apt-cache", append(apt, "search", "--names-only", pattern.String())...); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			names = append(names, strings.Fields(l + " -")[0])
		}
	}
	m, _ := filepath.Glob(filepath.Join(debs, "linux-image-*.deb"))
	for _, d := range m {
		names = append(names, strings.SplitN(filepath.Base(d), "_", 2)[0])
	}
	best, bestN := "", -1
	for _, n := range names {
		if sm := pattern.FindStringSubmatch(n); sm != nil {
			if v, _ := strconv.Atoi(sm[1]); v > bestN {
				best, bestN = n, v
			}
		}
	}
	return best
}

// unpack extracts the kernel and the guest's modules of deb into
// CacheDir/kernel/NAME once.
func (b *builder) unpack(deb string) (string, error) {
	dir := filepath.Join(b.opts.CacheDir, "kernel", strings.TrimSuffix(filepath.Base(deb), ".deb")+"-"+modulesKey())
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	b.opts.Log("vm: unpacking %s", deb)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "unpack-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	full := filepath.Join(tmp, "full")
	if _, err := b.run("", nil, "dpkg-deb", "-x", deb, full); err != nil {
		return "", err
	}
	keep := filepath.Join(tmp, "keep")
	kernels, _ := filepath.Glob(filepath.Join(full, "boot", "vmlinuz-*"))
	if len(kernels) != 1 {
		return "", fmt.Errorf("vm: %s holds %d boot/vmlinuz-*", deb, len(kernels))
	}
	rel := strings.TrimPrefix(filepath.Base(kernels[0]), "vmlinuz-")
	mdir := filepath.Join("lib", "modules", rel)
	builtin, err := os.ReadFile(filepath.Join(full, mdir, "modules.builtin"))
	if err != nil {
		return "", fmt.Errorf("vm: kernel package %s: %w", filepath.Base(deb), err)
	}
	files := map[string][]byte{filepath.Join(mdir, "modules.builtin"): builtin}
	if files[filepath.Join("boot", "vmlinuz-"+rel)], err = os.ReadFile(kernels[0]); err != nil {
		return "", err
	}
	for _, m := range guestModules {
		f := filepath.Join(mdir, "kernel", m.path)
		data, err := b.readModule(filepath.Join(full, f))
		switch {
		case errors.Is(err, fs.ErrNotExist) && isBuiltin(builtin, m.path):
			continue // built into this kernel (6.12 has virtio and virtio_console built in)
		case err != nil:
			return "", fmt.Errorf("vm: kernel package %s: %w", filepath.Base(deb), err)
		}
		files[f] = data
	}
	for f, data := range files {
		if err := os.MkdirAll(filepath.Join(keep, filepath.Dir(f)), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(keep, f), data, 0o644); err != nil {
			return "", err
		}
	}
	if err := os.Rename(keep, dir); err != nil {
		return "", fmt.Errorf("vm: unpack: %w", err)
	}
	return dir, nil
}

// modulesKey names the module list, so an unpacked kernel is redone when
// the list changes.
func modulesKey() string {
	h := sha256.New()
	for _, m := range guestModules {
		fmt.Fprintln(h, m.path)
	}
	return hex.EncodeToString(h.Sum(nil))[:8]
}

// readModule reads a module, or its xz-compressed form (path.xz, as Debian
// ships 6.12's) decompressed with xz(1), since busybox insmod and
// finit_module without CONFIG_MODULE_DECOMPRESS want plain ELF.
func (b *builder) readModule(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return data, err
	}
	if _, serr := os.Stat(path + ".xz"); serr != nil {
		return nil, err
	}
	out, xerr := b.run("", nil, "xz", "-dc", path+".xz")
	if xerr != nil {
		return nil, fmt.Errorf("vm: decompress %s (apt-get install xz-utils): %w", path+".xz", xerr)
	}
	return out, nil
}

// isBuiltin reports whether modules.builtin lists the module at path
// (relative to kernel/).
func isBuiltin(builtin []byte, path string) bool {
	for _, l := range strings.Split(string(builtin), "\n") {
		if strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(l), "kernel/"), ".xz") == path {
			return true
		}
	}
	return false
}

// archive assembles the initramfs contents.
func (b *builder) archive(kdir, rel string) (*archive, error) {
	a := newArchive()
	for _, d := range []string{"proc", "sys", "dev", "tmp", "run", "etc/nvme", "var/lib/inof-host", "root"} {
		a.Dir(d)
	}
	// busybox and every applet.
	bb, err := exec.LookPath("busybox")
	if err != nil {
		return nil, fmt.Errorf("vm: busybox (apt-get install busybox-static): %w", err)
	}
	if err := addHostFile(a, bb, "/bin/busybox"); err != nil {
		return nil, err
	}
	list, err := b.run("", nil, bb, "--list-full")
	if err != nil {
		return nil, err
	}
	for _, p := range strings.Fields(string(list)) {
		if p != "bin/busybox" && p != "linuxrc" {
			a.Symlink(p, "/bin/busybox")
		}
	}
	if dynamic(bb) {
		return nil, fmt.Errorf("vm: %s is dynamically linked; install busybox-static", bb)
	}
	// nvme-cli (and iproute2's ip) with the libraries ldd lists.
	dyn := []struct{ name, pkg, guest string }{{"nvme", "nvme-cli", GuestNVMe}}
	if b.opts.Fabric {
		dyn = append(dyn, struct{ name, pkg, guest string }{"ip", "iproute2", GuestIP})
	}
	for _, d := range dyn {
		name := d.name
		if name == "ip" {
			name = "/usr/sbin/ip" // iproute2's; busybox may come first in PATH
		}
		host, err := exec.LookPath(name)
		if err != nil {
			return nil, fmt.Errorf("vm: %s (apt-get install %s): %w", d.name, d.pkg, err)
		}
		if err := addHostFile(a, host, d.guest); err != nil {
			return nil, err
		}
		ldd, err := b.run("", nil, "ldd", host)
		if err != nil {
			return nil, err
		}
		for _, lib := range lddPaths(string(ldd)) {
			if err := addHostFile(a, lib, lib); err != nil {
				return nil, err
			}
		}
	}
	// Kernel modules and their load list.
	var mods strings.Builder
	for _, m := range guestModules {
		gp := filepath.Join("/lib/modules", rel, "kernel", m.path)
		if _, err := os.Stat(filepath.Join(kdir, gp)); errors.Is(err, fs.ErrNotExist) {
			continue // built in (unpack checked modules.builtin)
		}
		if err := addHostFile(a, filepath.Join(kdir, gp), gp); err != nil {
			return nil, err
		}
		fmt.Fprintf(&mods, "%s %s\n", gp, m.params)
	}
	a.File("etc/inof-vm/modules", []byte(mods.String()), 0o644)
	// Our static binaries.
	bin, err := os.MkdirTemp("", "inof-vm-bin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(bin)
	progs := []struct{ pkg, out, guest string }{
		{module + "/integration/vm/guestinit", "init", "/init"},
		{module + "/cmd/inof-host", "inof-host", GuestInofHost},
	}
	if b.opts.Fabric {
		progs = append(progs, struct{ pkg, out, guest string }{module + "/cmd/inofd", "inofd", GuestInofd},
			struct{ pkg, out, guest string }{module + "/cmd/inofctl", "inofctl", GuestInofctl})
	}
	for _, g := range progs {
		out := filepath.Join(bin, g.out)
		if _, err := b.run("", []string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, g.pkg); err != nil {
			return nil, err
		}
		if err := addHostFile(a, out, g.guest); err != nil {
			return nil, err
		}
	}
	a.Symlink(GuestIOStall, "/init")
	a.Symlink(GuestSockKill, "/init")
	a.Symlink(GuestCuts, "/init")
	a.File("etc/passwd", []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644)
	a.File("etc/group", []byte("root:x:0:\n"), 0o644)
	return a, nil
}

// addHostFile copies a host file (following symlinks) into the archive.
func addHostFile(a *archive, host, guest string) error {
	data, err := os.ReadFile(host)
	if err != nil {
		return fmt.Errorf("vm: image: %w", err)
	}
	st, err := os.Stat(host)
	if err != nil {
		return err
	}
	perm := st.Mode().Perm()
	if perm&0o111 == 0 && !strings.HasSuffix(host, ".ko") {
		perm = fs.FileMode(0o644)
	}
	return a.File(guest, data, perm)
}

// dynamic reports whether the ELF file asks for a program interpreter.
func dynamic(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}

// lddPaths reads ldd's output: the absolute paths of the libraries and the
// dynamic loader (not the vDSO).
func lddPaths(out string) []string {
	var paths []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			paths = append(paths, f[2])
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			paths = append(paths, f[0])
		}
	}
	return paths
}
