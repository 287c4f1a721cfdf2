package packaging

import (
	"encoding/json"
	"path"
	"strings"
	"testing"
)

// TestSONiCManifestValid: the image's manifest passes sonic-package-manager's
// schema rules and says what SONiC needs to run the agent: the service
// after swss and syncd, privileged, no CLI plugin, the configuration file
// inofd reads inside a mounted directory, a semantic version.
func TestSONiCManifestValid(t *testing.T) {
	for _, v := range []string{"1.2.0", "1.2.0+git20261206065111.7e0f9691437a", "0.0.0~git20261206065111.7e0f9691437a"} {
		m := NewSONiCManifest(v)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateSONiCManifest(b); err != nil {
			t.Fatalf("version %s: %v\n%s", v, err, b)
		}
	}
	m := NewSONiCManifest("1.2.0")
	if m.Service.Name != "inofd" || m.Package.Name != "inofd" || !m.Container.Privileged ||
		strings.Join(m.Service.After, ",") != "swss,syncd" || m.CLI.Mandatory || len(m.CLI.Show)+len(m.CLI.Config)+len(m.CLI.Clear) != 0 {
		t.Fatalf("manifest %+v", m)
	}
	mounted := false
	for _, v := range m.Container.Volumes {
		parts := strings.Split(v, ":")
		if strings.HasPrefix(SONiCConfigFile, parts[1]+"/") && path.Dir(SONiCConfigFile) == parts[1] &&
			parts[0] == SONiCConfigDir && len(parts) == 3 && parts[2] == "ro" {
			mounted = true
		}
	}
	if !mounted {
		t.Fatalf("no read-only volume %s holding %s: %v", SONiCConfigDir, SONiCConfigFile, m.Container.Volumes)
	}
}

// TestSONiCManifestRefused: each rule of the schema refuses a manifest that
// breaks it.
func TestSONiCManifestRefused(t *testing.T) {
	edits := map[string]struct {
		edit func(root map[string]any)
		want string
	}{
		"no package name":     {func(r map[string]any) { delete(r["package"].(map[string]any), "name") }, "package.name is required"},
		"no package version":  {func(r map[string]any) { delete(r["package"].(map[string]any), "version") }, "package.version is required"},
		"no service name":     {func(r map[string]any) { delete(r["service"].(map[string]any), "name") }, "service.name is required"},
		"no service":          {func(r map[string]any) { delete(r, "service") }, "service is required"},
		"version not semver":  {func(r map[string]any) { r["package"].(map[string]any)["version"] = "0.0.0~git1.abc" }, "package.version"},
		"privileged a string": {func(r map[string]any) { r["container"].(map[string]any)["privileged"] = "yes" }, "container.privileged"},
		"after a string":      {func(r map[string]any) { r["service"].(map[string]any)["after"] = "swss" }, "service.after"},
		"requires numbers":    {func(r map[string]any) { r["service"].(map[string]any)["requires"] = []any{1.0} }, "service.requires"},
		"volume no target":    {func(r map[string]any) { r["container"].(map[string]any)["volumes"] = []any{"/etc/sonic/inof"} }, "container.volumes"},
		"unknown key":         {func(r map[string]any) { r["service"].(map[string]any)["host-network"] = true }, "service.host-network: not a field"},
		"process without name": {func(r map[string]any) { r["processes"] = []any{map[string]any{"reconciles": true}} },
			"processes[0].name is required"},
		"cli show a number": {func(r map[string]any) { r["cli"].(map[string]any)["show"] = 3.0 }, "cli.show"},
		"package a list":    {func(r map[string]any) { r["package"] = []any{} }, "package: [] is not object"},
	}
	for name, e := range edits {
		b, _ := json.Marshal(NewSONiCManifest("1.2.0"))
		var root map[string]any
		if err := json.Unmarshal(b, &root); err != nil {
			t.Fatal(err)
		}
		e.edit(root)
		b, _ = json.Marshal(root)
		err := ValidateSONiCManifest(b)
		if err == nil || !strings.Contains(err.Error(), e.want) {
			t.Errorf("%s: error %v, want one with %q", name, err, e.want)
		}
	}
	if err := ValidateSONiCManifest([]byte(`["not", "an", "object"]`)); err == nil {
		t.Error("a JSON list accepted")
	}
}

// TestSemVer: every package version becomes a valid semantic version that
// keeps the order of releases and snapshots.
func TestSemVer(t *testing.T) {
	for in, want := range map[string]string{
		"1.2.0":                                "1.2.0",
		"1.2.0+git20261206065111.7e0f9691437a": "1.2.0+git20261206065111.7e0f9691437a",
		"0.0.0~git20261206065111.7e0f9691437a": "0.0.0-git20261206065111+7e0f9691437a",
		"0.0.0~git20261206065111.012345678901": "0.0.0-git20261206065111+012345678901",
		"1.0.0~rc1":                            "0.0.0+1.0.0.rc1",
		"":                                     "0.0.0",
	} {
		got := SemVer(in)
		if got != want || !semVer.MatchString(got) {
			t.Errorf("SemVer(%q) = %q (valid %v), want %q", in, got, semVer.MatchString(got), want)
		}
	}
}
