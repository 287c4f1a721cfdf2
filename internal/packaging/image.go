package packaging

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/openinof/inof/internal/rootfs"
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
	// SONiC builds the switch agent's SONiC application extension instead
	// (make sonic-image): the same root file system, the manifest label
	// (NewSONiCManifest) and the switch role's command line, reading
	// SONiCConfigFile. Its default tag is DefaultSONiCImage.
	SONiC bool
}

// BuildImage builds the inofd container image without a registry or a
// base image: inofd and inofctl, static, with the example configurations
// under /etc/inof and the directories the units would make (state under
// /var/lib, the API socket's under /run), packed into a root file system
// that `docker import` turns into an image whose entrypoint is inofd.
// docs/operations.md, "Container image", shows docker run and
// containerlab use; "Installing on SONiC" the SONiC variant (o.SONiC).
func BuildImage(ctx context.Context, o ImageOptions) error {
	if o.Tag == "" {
		o.Tag = DefaultImage
		if o.SONiC {
			o.Tag = DefaultSONiCImage
		}
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
	version, err := Version(ctx, o.Root)
	if err != nil {
		return err
	}
	bins, err := buildBinaries(ctx, Options{Root: o.Root, Go: o.Go, Arch: debianArch(runtime.GOARCH), Version: version}, work)
	if err != nil {
		return err
	}
	fs := rootfs.New()
	for _, d := range []string{"usr/", "usr/bin/", "etc/", "etc/inof/", "var/", "var/lib/", "run/"} {
		fs.Dir(d, 0o755)
	}
	for _, d := range []string{"var/lib/inofd-reflector/", "var/lib/inofd-switch/", "run/inofd/", "run/inofd-switch/"} {
		fs.Dir(d, 0o700)
	}
	fs.Dir("tmp/", 0o1777)
	fs.File("usr/bin/inofd", 0o755, bins["inofd"])
	fs.File("usr/bin/inofctl", 0o755, bins["inofctl"])
	for _, c := range []string{"inofd-reflector.yaml", "inofd-switch.yaml"} {
		body, err := os.ReadFile(filepath.Join(o.Root, "docs", "deploy", c))
		if err != nil {
			return fmt.Errorf("packaging: %w", err)
		}
		fs.File("etc/inof/"+c, 0o644, body)
	}
	fs.File("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/usr/sbin/nologin\n"))
	fs.File("etc/group", 0o644, []byte("root:x:0:\n"))
	changes := []string{
		`ENTRYPOINT ["/usr/bin/inofd"]`,
		"ENV INOF_LOG_FORMAT=json",
		"LABEL org.opencontainers.image.title=inofd org.opencontainers.image.version=" + version +
			" org.opencontainers.image.source=https://github.com/openinof/inof",
	}
	if o.SONiC {
		manifest, err := json.Marshal(NewSONiCManifest(version))
		if err != nil {
			return fmt.Errorf("packaging: %w", err)
		}
		if err := ValidateSONiCManifest(manifest); err != nil {
			return fmt.Errorf("packaging: %w", err)
		}
		quote := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
		changes = append(changes, `CMD ["--role", "switch", "--config", "`+SONiCConfigFile+`"]`,
			"LABEL "+SONiCManifestLabel+`="`+quote.Replace(string(manifest))+`"`)
	}
	return fs.Import(ctx, o.Docker, o.Tag, changes...)
}
