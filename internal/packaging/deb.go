package packaging

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Options say what to build and where.
type Options struct {
	// Root is the module's directory (the repository); empty: the current
	// directory.
	Root string
	// Out receives the .deb files (created if missing).
	Out string
	// Version is the packages' version; empty: Version(Root).
	Version string
	// Arch is the Debian architecture; empty: the one of GOARCH.
	Arch string
	// Go is the go command; empty: "go".
	Go string
}

// file is one file of a package: its path in the installed system, its
// content and mode.
type file struct {
	path string
	data []byte
	mode fs.FileMode
}

// pkg is one Debian package.
type pkg struct {
	name, description string
	depends           []string
	recommends        []string
	files             []file
	conffiles         []string // paths of files that are conffiles
	scripts           map[string][]byte
}

// Build builds the packages inofd, inof-host and inofctl and returns the
// paths of the .deb files.
func Build(ctx context.Context, o Options) ([]string, error) {
	if o.Root == "" {
		o.Root = "."
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Arch == "" {
		o.Arch = debianArch(runtime.GOARCH)
	}
	if o.Version == "" {
		v, err := Version(ctx, o.Root)
		if err != nil {
			return nil, err
		}
		o.Version = v
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("packaging: %w", err)
	}
	work, err := os.MkdirTemp("", "inof-package-")
	if err != nil {
		return nil, fmt.Errorf("packaging: %w", err)
	}
	defer os.RemoveAll(work)
	bins, err := buildBinaries(ctx, o, filepath.Join(work, "bin"))
	if err != nil {
		return nil, err
	}
	pkgs, err := packages(ctx, o, bins)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pkgs {
		deb, err := writeDeb(ctx, p, o, filepath.Join(work, p.name))
		if err != nil {
			return nil, err
		}
		out = append(out, deb)
	}
	return out, nil
}

// Version is the version of the packages built from the work tree at root:
// the nearest tag without its "v" (1.2.0; with commits since it
// 1.2.0+git20261130120000.0123456789ab), or, without a tag,
// 0.0.0~git<commit time>.<revision>, which sorts below any release.
func Version(ctx context.Context, root string) (string, error) {
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = root
		b, err := cmd.Output()
		return strings.TrimSpace(string(b)), err
	}
	when, err := git("log", "-1", "--format=%cd", "--date=format-local:%Y%m%d%H%M%S")
	if err != nil {
		return "", fmt.Errorf("packaging: version from git: %w", err)
	}
	rev, err := git("rev-parse", "--short=12", "HEAD")
	if err != nil {
		return "", fmt.Errorf("packaging: version from git: %w", err)
	}
	snapshot := "git" + when + "." + rev
	tag, err := git("describe", "--tags", "--abbrev=0", "--match", "v[0-9]*")
	if err != nil || tag == "" {
		return "0.0.0~" + snapshot, nil
	}
	base := strings.TrimPrefix(tag, "v")
	if exact, err := git("describe", "--tags", "--exact-match", "--match", "v[0-9]*"); err == nil && exact == tag {
		return base, nil
	}
	return base + "+" + snapshot, nil
}

func debianArch(goarch string) string {
	switch goarch {
	case "386":
		return "i386"
	case "arm":
		return "armhf"
	}
	return goarch // amd64, arm64, ppc64le, riscv64, s390x
}

// buildBinaries builds the three commands, static (CGO_ENABLED=0) and with
// trimmed paths, into dir.
func buildBinaries(ctx context.Context, o Options, dir string) (map[string][]byte, error) {
	cmd := exec.CommandContext(ctx, o.Go, "build", "-trimpath", "-ldflags=-s -w", "-o", dir+string(filepath.Separator),
		"./cmd/inofd", "./cmd/inof-host", "./cmd/inofctl")
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOARCH="+goArch(o.Arch))
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("packaging: go build: %w\n%s", err, out)
	}
	bins := map[string][]byte{}
	for _, b := range []string{"inofd", "inof-host", "inofctl"} {
		data, err := os.ReadFile(filepath.Join(dir, b))
		if err != nil {
			return nil, fmt.Errorf("packaging: %w", err)
		}
		bins[b] = data
	}
	return bins, nil
}

func goArch(debArch string) string {
	switch debArch {
	case "i386":
		return "386"
	case "armhf":
		return "arm"
	}
	return debArch
}

// manPages generates the manual pages, gzipped as Debian ships them: the
// daemons' from their hidden --man-page flag (run on this machine, so only
// for a native build), inofctl's from its command tree (gendoc -man).
func manPages(ctx context.Context, o Options, bins map[string][]byte) (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "inof-man-")
	if err != nil {
		return nil, fmt.Errorf("packaging: %w", err)
	}
	defer os.RemoveAll(dir)
	env := append(os.Environ(), "SOURCE_DATE_EPOCH="+sourceDate(ctx, o.Root))
	pages := map[string][]byte{}
	for _, d := range []string{"inofd", "inof-host"} {
		bin := filepath.Join(dir, d)
		if err := os.WriteFile(bin, bins[d], 0o755); err != nil {
			return nil, fmt.Errorf("packaging: %w", err)
		}
		cmd := exec.CommandContext(ctx, bin, "--man-page")
		cmd.Env = env
		page, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("packaging: %s --man-page: %w", d, err)
		}
		pages["man8/"+d+".8"] = page
	}
	mdir := filepath.Join(dir, "man1")
	cmd := exec.CommandContext(ctx, o.Go, "run", "./cmd/inofctl/internal/gendoc", "-man", mdir)
	cmd.Dir, cmd.Env = o.Root, env
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("packaging: inofctl manual pages: %w\n%s", err, out)
	}
	ents, err := os.ReadDir(mdir)
	if err != nil {
		return nil, fmt.Errorf("packaging: %w", err)
	}
	for _, e := range ents {
		page, err := os.ReadFile(filepath.Join(mdir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("packaging: %w", err)
		}
		pages["man1/"+e.Name()] = page
	}
	for name, page := range pages {
		var z bytes.Buffer
		w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		w.ModTime = time.Unix(0, 0) // reproducible: no name, no time
		if _, err := w.Write(page); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		pages[name] = z.Bytes()
	}
	return pages, nil
}

// sourceDate is the commit time in seconds (SOURCE_DATE_EPOCH), so that the
// manual pages' dates do not change from one build to the next.
func sourceDate(ctx context.Context, root string) string {
	cmd := exec.CommandContext(ctx, "git", "log", "-1", "--format=%ct")
	cmd.Dir = root
	b, err := cmd.Output()
	if err != nil {
		return "0"
	}
	return strings.TrimSpace(string(b))
}

// packages lays out the three packages.
func packages(ctx context.Context, o Options, bins map[string][]byte) ([]pkg, error) {
	read := func(rel string) ([]byte, error) { return os.ReadFile(filepath.Join(o.Root, rel)) }
	var errs []error
	must := func(rel string) []byte {
		b, err := read(rel)
		if err != nil {
			errs = append(errs, fmt.Errorf("packaging: %w", err))
		}
		return b
	}
	pages, err := manPages(ctx, o, bins)
	if err != nil {
		return nil, err
	}
	license := must("LICENSE")
	copyright := func(name string) file {
		head := "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\nUpstream-Name: inof\n" +
			"Source: https://github.com/openinof/inof\n\nFiles: *\nLicense: see below\n\n"
		return file{"/usr/share/doc/" + name + "/copyright", append([]byte(head), license...), 0o644}
	}
	script := func(name string) []byte { return must("internal/packaging/debian/" + name) }
	inofd := pkg{name: "inofd", description: "iNOF fabric daemon: route reflector and zone authority, or switch agent\n" +
		" inofd runs one role of the iNOF NVMe-oF fabric control plane per process:\n" +
		" inofd-reflector.service (route reflector holding the zones) and\n" +
		" inofd-switch.service (the agent of a switch's access ports). Edit\n" +
		" /etc/inof/inofd-*.yaml, then systemctl enable --now the unit.",
		depends:    []string{"procps"}, // /bin/kill of ExecReload=
		recommends: []string{"inofctl"},
		files: []file{
			{"/usr/bin/inofd", bins["inofd"], 0o755},
			{"/lib/systemd/system/inofd-reflector.service", must("docs/deploy/inofd-reflector.service"), 0o644},
			{"/lib/systemd/system/inofd-switch.service", must("docs/deploy/inofd-switch.service"), 0o644},
			{"/etc/inof/inofd-reflector.yaml", must("docs/deploy/inofd-reflector.yaml"), 0o640},
			{"/etc/inof/inofd-switch.yaml", must("docs/deploy/inofd-switch.yaml"), 0o640},
			{"/usr/lib/sysusers.d/inofd.conf", must("internal/packaging/debian/inofd.sysusers"), 0o644},
			{"/usr/share/man/man8/inofd.8.gz", pages["man8/inofd.8"], 0o644},
			copyright("inofd"),
		},
		conffiles: []string{"/etc/inof/inofd-reflector.yaml", "/etc/inof/inofd-switch.yaml"},
		scripts: map[string][]byte{"postinst": script("inofd.postinst"), "prerm": script("inofd.prerm"),
			"postrm": script("inofd.postrm")}}
	host := pkg{name: "inof-host", description: "iNOF host agent: NVMe-oF registration, notifications, nvme connect\n" +
		" inof-host registers a server's or storage array's interfaces with the\n" +
		" iNOF switch agent (nvme-snsd compatible), ACKs its notifications and\n" +
		" connects or disconnects NVMe-oF controllers with nvme-cli.",
		depends: []string{"nvme-cli", "procps"},
		files: []file{
			{"/usr/bin/inof-host", bins["inof-host"], 0o755},
			{"/lib/systemd/system/inof-host.service", must("docs/deploy/inof-host.service"), 0o644},
			{"/etc/inof/inof-host.yaml", must("docs/deploy/inof-host.yaml"), 0o640},
			{"/usr/share/man/man8/inof-host.8.gz", pages["man8/inof-host.8"], 0o644},
			copyright("inof-host"),
		},
		conffiles: []string{"/etc/inof/inof-host.yaml"},
		scripts: map[string][]byte{"postinst": script("inof-host.postinst"), "prerm": script("inof-host.prerm"),
			"postrm": script("inof-host.postrm")}}
	ctl := pkg{name: "inofctl", description: "iNOF admin CLI: zoning, devices, sessions, events, lossless profile\n" +
		" inofctl talks to the gRPC API of inofd (the local unix socket\n" +
		" /run/inofd/api.sock by default, or TLS with a bearer token).",
		files: []file{{"/usr/bin/inofctl", bins["inofctl"], 0o755}, copyright("inofctl")}}
	for name, page := range pages {
		if strings.HasPrefix(name, "man1/") {
			ctl.files = append(ctl.files, file{"/usr/share/man/" + name + ".gz", page, 0o644})
		}
	}
	return []pkg{inofd, host, ctl}, errors.Join(errs...)
}

// writeDeb lays p out under dir and seals it with dpkg-deb.
func writeDeb(ctx context.Context, p pkg, o Options, dir string) (string, error) {
	var size int64
	for _, f := range p.files {
		path := filepath.Join(dir, f.path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", fmt.Errorf("packaging: %w", err)
		}
		if err := os.WriteFile(path, f.data, f.mode); err != nil {
			return "", fmt.Errorf("packaging: %w", err)
		}
		if err := os.Chmod(path, f.mode); err != nil { // past the umask
			return "", fmt.Errorf("packaging: %w", err)
		}
		size += int64(len(f.data))
	}
	ctl := filepath.Join(dir, "DEBIAN")
	if err := os.MkdirAll(ctl, 0o755); err != nil {
		return "", fmt.Errorf("packaging: %w", err)
	}
	var c strings.Builder
	fmt.Fprintf(&c, "Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: inof developers <inof@openinof.invalid>\n",
		p.name, o.Version, o.Arch)
	fmt.Fprintf(&c, "Installed-Size: %d\nSection: net\nPriority: optional\nHomepage: https://github.com/openinof/inof\n", (size+1023)/1024)
	if len(p.depends) > 0 {
		fmt.Fprintf(&c, "Depends: %s\n", strings.Join(p.depends, ", "))
	}
	if len(p.recommends) > 0 {
		fmt.Fprintf(&c, "Recommends: %s\n", strings.Join(p.recommends, ", "))
	}
	fmt.Fprintf(&c, "Description: %s\n", p.description)
	meta := map[string][]byte{"control": []byte(c.String())}
	if len(p.conffiles) > 0 {
		meta["conffiles"] = []byte(strings.Join(p.conffiles, "\n") + "\n")
	}
	for name, body := range meta {
		if err := os.WriteFile(filepath.Join(ctl, name), body, 0o644); err != nil {
			return "", fmt.Errorf("packaging: %w", err)
		}
	}
	for name, body := range p.scripts {
		path := filepath.Join(ctl, name)
		if err := os.WriteFile(path, body, 0o755); err != nil {
			return "", fmt.Errorf("packaging: %w", err)
		}
		if err := os.Chmod(path, 0o755); err != nil {
			return "", fmt.Errorf("packaging: %w", err)
		}
	}
	deb := filepath.Join(o.Out, fmt.Sprintf("%s_%s_%s.deb", p.name, o.Version, o.Arch))
	cmd := exec.CommandContext(ctx, "dpkg-deb", "--root-owner-group", "-Zgzip", "--build", dir, deb)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("packaging: dpkg-deb %s: %w\n%s", p.name, err, out)
	}
	return deb, nil
}
