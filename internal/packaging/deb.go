package packaging

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/openinof/inof/internal/buildinfo"
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
	binDir := filepath.Join(work, "bin")
	bins, err := buildBinaries(ctx, o, binDir)
	if err != nil {
		return nil, err
	}
	pkgs, err := packages(ctx, o, bins, binDir)
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
// trimmed paths, into dir, declaring o.Version and the work tree's revision
// to internal/buildinfo (--version, the manual pages' footers).
func buildBinaries(ctx context.Context, o Options, dir string) (map[string][]byte, error) {
	cmd := exec.CommandContext(ctx, o.Go, "build", "-trimpath", "-ldflags=-s -w "+linkerFlags(ctx, o),
		"-o", dir+string(filepath.Separator), "./cmd/inofd", "./cmd/inof-host", "./cmd/inofctl")
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

// linkerFlags declare o.Version and the revision of the work tree at
// o.Root (none when git cannot tell) to internal/buildinfo.
func linkerFlags(ctx context.Context, o Options) string {
	cmd := exec.CommandContext(ctx, "git", "rev-parse", "HEAD")
	cmd.Dir = o.Root
	rev, err := cmd.Output()
	if err != nil {
		rev = nil
	}
	return buildinfo.LinkerFlags(o.Version, strings.TrimSpace(string(rev)))
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
// daemons' from their hidden --man-pages flag (run on this machine, so only
// for a native build), inofctl's from its command tree (gendoc -man), all
// with o.Version in their footers. The keys are "man8/inofd.8" and alike.
func manPages(ctx context.Context, o Options, binDir string) (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "inof-man-")
	if err != nil {
		return nil, fmt.Errorf("packaging: %w", err)
	}
	defer os.RemoveAll(dir)
	env := append(os.Environ(), "SOURCE_DATE_EPOCH="+sourceDate(ctx, o.Root))
	for _, d := range []string{"inofd", "inof-host"} {
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, d), "--man-pages", filepath.Join(dir, "man8"))
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("packaging: %s --man-pages: %w\n%s", d, err, out)
		}
	}
	cmd := exec.CommandContext(ctx, o.Go, "run", "-ldflags="+linkerFlags(ctx, o), "./cmd/inofctl/internal/gendoc",
		"-man", filepath.Join(dir, "man1"))
	cmd.Dir, cmd.Env = o.Root, env
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("packaging: inofctl manual pages: %w\n%s", err, out)
	}
	pages := map[string][]byte{}
	for _, sec := range []string{"man1", "man8"} {
		ents, err := os.ReadDir(filepath.Join(dir, sec))
		if err != nil {
			return nil, fmt.Errorf("packaging: %w", err)
		}
		for _, e := range ents {
			page, err := os.ReadFile(filepath.Join(dir, sec, e.Name()))
			if err != nil {
				return nil, fmt.Errorf("packaging: %w", err)
			}
			pages[sec+"/"+e.Name()] = page
		}
	}
	return pages, nil
}

// docRef is a reference of a manual page to the repository's
// documentation, which the packages install under /usr/share/doc.
var docRef = regexp.MustCompile(`docs/([a-z0-9-]+\.md)`)

// seeAlso is a manual page's reference to another one: \fBinofd-restore(8)\fP.
var seeAlso = regexp.MustCompile(`\\fB([a-z0-9-]+)\((\d)\)\\fP`)

// installDocs points the manual pages of p to the documents they cite
// (docs/operations.md becomes /usr/share/doc/inofd/operations.md), adds
// those documents to p and gzips the pages. A page citing a page that no
// package ships is an error.
func installDocs(p *pkg, pages map[string][]byte, names []string, shipped map[string]bool, read func(string) ([]byte, error)) error {
	docs := map[string]bool{}
	for _, name := range names {
		page := docRef.ReplaceAllFunc(pages[name], func(m []byte) []byte {
			doc := string(docRef.FindSubmatch(m)[1])
			docs[doc] = true
			return []byte("/usr/share/doc/" + p.name + "/" + doc)
		})
		for _, ref := range seeAlso.FindAllSubmatch(page, -1) {
			if want := "man" + string(ref[2]) + "/" + string(ref[1]) + "." + string(ref[2]); !shipped[want] {
				return fmt.Errorf("packaging: %s refers to %s(%s), which no package ships", name, ref[1], ref[2])
			}
		}
		z, err := gzipped(page)
		if err != nil {
			return err
		}
		p.files = append(p.files, file{"/usr/share/man/" + name + ".gz", z, 0o644})
	}
	for _, doc := range slices.Sorted(maps.Keys(docs)) {
		body, err := read("docs/" + doc)
		if err != nil {
			return fmt.Errorf("packaging: %w", err)
		}
		p.files = append(p.files, file{"/usr/share/doc/" + p.name + "/" + doc, body, 0o644})
	}
	return nil
}

// gzipped is b compressed as Debian ships manual pages: reproducible, with
// no name and no time.
func gzipped(b []byte) ([]byte, error) {
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	w.ModTime = time.Unix(0, 0)
	if _, err := w.Write(b); err != nil {
		return nil, fmt.Errorf("packaging: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("packaging: %w", err)
	}
	return z.Bytes(), nil
}

// completions runs bin's completion command for bash, zsh and fish and
// returns the scripts at the paths the shells load them from.
func completions(ctx context.Context, bin, name string) ([]file, error) {
	paths := map[string]string{
		"bash": "/usr/share/bash-completion/completions/" + name,
		"zsh":  "/usr/share/zsh/vendor-completions/_" + name,
		"fish": "/usr/share/fish/vendor_completions.d/" + name + ".fish",
	}
	var out []file
	for _, sh := range []string{"bash", "zsh", "fish"} {
		script, err := exec.CommandContext(ctx, bin, "completion", sh).Output()
		if err != nil || len(script) == 0 {
			return nil, fmt.Errorf("packaging: %s completion %s: %w", name, sh, err)
		}
		out = append(out, file{paths[sh], script, 0o644})
	}
	return out, nil
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

// packages lays out the three packages; binDir holds bins, run to make the
// manual pages and the shell completions.
func packages(ctx context.Context, o Options, bins map[string][]byte, binDir string) ([]pkg, error) {
	read := func(rel string) ([]byte, error) { return os.ReadFile(filepath.Join(o.Root, rel)) }
	var errs []error
	must := func(rel string) []byte {
		b, err := read(rel)
		if err != nil {
			errs = append(errs, fmt.Errorf("packaging: %w", err))
		}
		return b
	}
	pages, err := manPages(ctx, o, binDir)
	if err != nil {
		return nil, err
	}
	ctlCompletions, err := completions(ctx, filepath.Join(binDir, "inofctl"), "inofctl")
	if err != nil {
		return nil, err
	}
	inofdCompletions, err := completions(ctx, filepath.Join(binDir, "inofd"), "inofd")
	if err != nil {
		return nil, err
	}
	// Examples and monitoring beside the documentation: the configurations
	// of the other topologies (docs/operations.md, "Topologies"), the
	// Grafana dashboard and the Prometheus rules with their tests.
	examples := []file{}
	for _, f := range []struct{ src, dst string }{
		{"docs/deploy/inofd-switch-direct.yaml", "examples/inofd-switch-direct.yaml"},
		{"docs/deploy/inofd-switch-on-reflector.yaml", "examples/inofd-switch-on-reflector.yaml"},
		{"docs/deploy/grafana/inof-fabric.json", "monitoring/grafana/inof-fabric.json"},
		{"docs/deploy/prometheus/inof-alerts.yml", "monitoring/prometheus/inof-alerts.yml"},
		{"docs/deploy/prometheus/inof-alerts.test.yml", "monitoring/prometheus/inof-alerts.test.yml"},
		{"docs/deploy/prometheus/scrape.yml", "monitoring/prometheus/scrape.yml"},
	} {
		examples = append(examples, file{"/usr/share/doc/inofd/" + f.dst, must(f.src), 0o644})
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
			copyright("inof-host"),
		},
		conffiles: []string{"/etc/inof/inof-host.yaml"},
		scripts: map[string][]byte{"postinst": script("inof-host.postinst"), "prerm": script("inof-host.prerm"),
			"postrm": script("inof-host.postrm")}}
	ctl := pkg{name: "inofctl", description: "iNOF admin CLI: zoning, devices, sessions, events, lossless profile\n" +
		" inofctl talks to the gRPC API of inofd (the local unix socket\n" +
		" /run/inofd/api.sock by default, or TLS with a bearer token).",
		files: []file{{"/usr/bin/inofctl", bins["inofctl"], 0o755}, copyright("inofctl")}}
	inofd.files = append(append(inofd.files, inofdCompletions...), examples...)
	ctl.files = append(ctl.files, ctlCompletions...)
	shipped := map[string]bool{}
	for name := range pages {
		shipped[name] = true
	}
	owner := func(name string) *pkg {
		switch {
		case strings.HasPrefix(name, "man1/"):
			return &ctl
		case strings.HasPrefix(name, "man8/inof-host"):
			return &host
		}
		return &inofd
	}
	for _, p := range []*pkg{&inofd, &host, &ctl} {
		var names []string
		for _, name := range slices.Sorted(maps.Keys(pages)) {
			if owner(name) == p {
				names = append(names, name)
			}
		}
		if err := installDocs(p, pages, names, shipped, read); err != nil {
			return nil, err
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
