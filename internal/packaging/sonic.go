package packaging

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// SONiC runs third-party agents as application extensions: a container
// image whose label com.azure.sonic.manifest holds a JSON manifest that
// sonic-package-manager reads at install (`sonic-package-manager install
// --from-tarball` or from a registry) to write the feature's systemd
// service and container script. The manifest's fields and their types are
// sonic-package-manager's (sonic-utilities, sonic_package_manager/manifest.py);
// the manifest below is our own, and ValidateSONiCManifest checks it by
// those rules.

// SONiCManifestLabel is the image label sonic-package-manager reads.
const SONiCManifestLabel = "com.azure.sonic.manifest"

// DefaultSONiCImage is the tag `make sonic-image` gives the image.
const DefaultSONiCImage = "inof/inofd-sonic:latest"

// SONiC paths of the feature: the configuration lives under /etc/sonic
// (kept across SONiC image upgrades, like config_db.json), the state under
// /var/lib on the switch; both are mounted into the container where inofd
// looks for them.
const (
	SONiCService    = "inofd"                       // the feature, its service and its container
	SONiCConfigDir  = "/etc/sonic/inof"             // on the switch, mounted on /etc/inof
	SONiCConfigFile = "/etc/inof/inofd-switch.yaml" // in the container
	SONiCStateDir   = "/var/lib/inofd-switch"       // on the switch and in the container
)

// SONiCManifest is the part of sonic-package-manager's manifest the image
// sets; the fields left out take the package manager's defaults.
type SONiCManifest struct {
	Version   string              `json:"version"`
	Package   SONiCPackage        `json:"package"`
	Service   SONiCServiceSection `json:"service"`
	Container SONiCContainer      `json:"container"`
	Processes []SONiCProcess      `json:"processes"`
	CLI       SONiCCLI            `json:"cli"`
}

// SONiCPackage names the package and its version (semantic versioning).
type SONiCPackage struct {
	Version     string   `json:"version"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Depends     []string `json:"depends"`
}

// SONiCServiceSection is the systemd service sonic-package-manager writes:
// its name and its ordering against SONiC's own services.
type SONiCServiceSection struct {
	Name          string   `json:"name"`
	Requires      []string `json:"requires"`
	After         []string `json:"after"`
	Before        []string `json:"before"`
	DependentOf   []string `json:"dependent-of"`
	AsicService   bool     `json:"asic-service"`
	HostService   bool     `json:"host-service"`
	Delayed       bool     `json:"delayed"`
	CheckUpStatus bool     `json:"check_up_status"`
}

// SONiCContainer is how the container runs. SONiC starts every feature
// container with the switch's (host) network; privileged gives the agent
// raw sockets and link state on the front-panel ports.
type SONiCContainer struct {
	Privileged  bool              `json:"privileged"`
	Volumes     []string          `json:"volumes"`
	Environment map[string]string `json:"environment"`
	Tmpfs       []string          `json:"tmpfs"`
}

// SONiCProcess is a process of the container SONiC's monitoring knows;
// the image runs inofd alone, without supervisord, and declares none.
type SONiCProcess struct {
	Name       string `json:"name"`
	Reconciles bool   `json:"reconciles"`
}

// SONiCCLI declares CLI plugins (none: inofctl in the container is the CLI).
type SONiCCLI struct {
	Mandatory bool     `json:"mandatory"`
	Show      []string `json:"show"`
	Config    []string `json:"config"`
	Clear     []string `json:"clear"`
}

// NewSONiCManifest is the manifest of the switch agent's image at version
// (a Debian-style version, turned into a semantic one).
func NewSONiCManifest(version string) SONiCManifest {
	return SONiCManifest{
		Version: "1.0.0",
		Package: SONiCPackage{
			Version: SemVer(version),
			Name:    SONiCService,
			Description: "iNOF switch agent: NVMe-oF hosts and targets register on the access ports (nvme-snsd " +
				"compatible); their records go to the fabric's route reflectors over BGP",
			Depends: []string{},
		},
		Service: SONiCServiceSection{
			Name: SONiCService,
			// The front-panel ports are made by syncd and brought up by
			// swss: the agent starts after both, and stops with swss
			// (whose restart takes the ports away).
			Requires:    []string{"swss"},
			After:       []string{"swss", "syncd"},
			Before:      []string{},
			DependentOf: []string{},
			HostService: true,
		},
		Container: SONiCContainer{
			Privileged:  true,
			Volumes:     []string{SONiCConfigDir + ":/etc/inof:ro", SONiCStateDir + ":" + SONiCStateDir},
			Environment: map[string]string{"INOF_LOG_FORMAT": "json"},
			Tmpfs:       []string{},
		},
		Processes: []SONiCProcess{},
		CLI:       SONiCCLI{Show: []string{}, Config: []string{}, Clear: []string{}},
	}
}

// debVersion is a version as Version makes it: 1.2.0, 1.2.0+git<time>.<rev>
// or 0.0.0~git<time>.<rev>.
var debVersion = regexp.MustCompile(`^(\d+\.\d+\.\d+)(?:([~+])git(\d+)\.([0-9a-f]+))?$`)

// SemVer turns a package version into a semantic version, as
// sonic-package-manager wants one: 1.2.0 stays, 1.2.0+git<time>.<rev>
// keeps its build metadata, 0.0.0~git<time>.<rev> (before any release)
// becomes the pre-release 0.0.0-git<time>+<rev>. Another version becomes
// 0.0.0+ its characters allowed in build metadata.
func SemVer(v string) string {
	m := debVersion.FindStringSubmatch(v)
	switch {
	case m == nil:
		clean := regexp.MustCompile(`[^0-9A-Za-z.-]+`).ReplaceAllString(v, ".")
		clean = strings.Trim(regexp.MustCompile(`\.{2,}`).ReplaceAllString(clean, "."), ".")
		if clean == "" {
			return "0.0.0"
		}
		return "0.0.0+" + clean
	case m[2] == "":
		return m[1]
	case m[2] == "+":
		return m[1] + "+git" + m[3] + "." + m[4]
	}
	return m[1] + "-git" + m[3] + "+" + m[4]
}

// semVer is semantic versioning 2.0.0's grammar.
var semVer = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// ValidateSONiCManifest checks a manifest (the label's JSON) by
// sonic-package-manager's schema: the root and its sections are objects,
// the required fields (package.version, package.name, service.name) are
// there, versions are semantic versions, every field the schema knows has
// its type (strings, booleans, lists of strings, objects), and the
// processes and volumes are well formed. Keys the schema does not know are
// refused too: the package manager ignores them, so they are mistakes.
func ValidateSONiCManifest(label []byte) error {
	var root map[string]any
	if err := json.Unmarshal(label, &root); err != nil {
		return fmt.Errorf("sonic manifest: not a JSON object: %w", err)
	}
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	check := func(where string, obj map[string]any, fields map[string]string, required ...string) {
		for _, r := range required {
			if _, ok := obj[r]; !ok {
				bad("%s%s is required", where, r)
			}
		}
		for k, v := range obj {
			kind, known := fields[k]
			if !known {
				bad("%s%s: not a field of the schema", where, k)
				continue
			}
			if !hasKind(v, kind) {
				bad("%s%s: %v is not %s", where, k, v, kind)
			}
		}
	}
	check("", root, map[string]string{"version": "semver", "package": "object", "service": "object",
		"container": "object", "processes": "list of objects", "cli": "object"}, "package", "service")
	section := func(k string) map[string]any { m, _ := root[k].(map[string]any); return m }
	check("package.", section("package"), map[string]string{"version": "semver", "name": "string",
		"description": "string", "base-os": "object", "depends": "list of strings", "breaks": "list of strings",
		"init-cfg": "object", "changelog": "object", "debug-dump": "string"}, "version", "name")
	shutdown := map[string]string{"after": "list of strings", "before": "list of strings"}
	check("service.", section("service"), map[string]string{"name": "string", "requires": "list of strings",
		"requisite": "list of strings", "wanted-by": "list of strings", "after": "list of strings",
		"before": "list of strings", "dependent": "list of strings", "dependent-of": "list of strings",
		"post-start-action": "string", "pre-shutdown-action": "string", "asic-service": "bool",
		"host-service": "bool", "delayed": "bool", "check_up_status": "bool", "type": "string",
		"stop-time": "string", "warm-shutdown": "object", "fast-shutdown": "object", "syslog": "object"}, "name")
	for _, k := range []string{"warm-shutdown", "fast-shutdown"} {
		if m, ok := section("service")[k].(map[string]any); ok {
			check("service."+k+".", m, shutdown)
		}
	}
	check("container.", section("container"), map[string]string{"privileged": "bool", "volumes": "list of strings",
		"mounts": "list of objects", "environment": "object", "tmpfs": "list of strings"})
	if vols, ok := section("container")["volumes"].([]any); ok {
		for _, v := range vols {
			if s, _ := v.(string); !strings.HasPrefix(s, "/") || len(strings.Split(s, ":")) < 2 || len(strings.Split(s, ":")) > 3 {
				bad("container.volumes: %q is not SOURCE:TARGET[:OPTIONS]", s)
			}
		}
	}
	if ps, ok := root["processes"].([]any); ok {
		for i, p := range ps {
			if m, ok := p.(map[string]any); ok {
				check(fmt.Sprintf("processes[%d].", i), m, map[string]string{"name": "string", "reconciles": "bool"}, "name")
			}
		}
	}
	check("cli.", section("cli"), map[string]string{"mandatory": "bool", "show": "string or list of strings",
		"config": "string or list of strings", "clear": "string or list of strings", "auto-generate-show": "bool",
		"auto-generate-config": "bool", "auto-generate-show-source-yang-modules": "list of strings",
		"auto-generate-config-source-yang-modules": "list of strings"})
	if len(errs) > 0 {
		return fmt.Errorf("sonic manifest: %s", strings.Join(errs, "; "))
	}
	return nil
}

// hasKind says whether a decoded JSON value is of a schema type.
func hasKind(v any, kind string) bool {
	strs := func(v any) bool {
		l, ok := v.([]any)
		if !ok {
			return false
		}
		for _, e := range l {
			if _, ok := e.(string); !ok {
				return false
			}
		}
		return true
	}
	switch kind {
	case "string":
		_, ok := v.(string)
		return ok
	case "semver":
		s, ok := v.(string)
		return ok && semVer.MatchString(s)
	case "bool":
		_, ok := v.(bool)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "list of strings":
		return strs(v)
	case "string or list of strings":
		_, ok := v.(string)
		return ok || strs(v)
	case "list of objects":
		l, ok := v.([]any)
		if !ok {
			return false
		}
		for _, e := range l {
			if _, ok := e.(map[string]any); !ok {
				return false
			}
		}
		return true
	}
	return false
}
