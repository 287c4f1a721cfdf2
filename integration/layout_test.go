package integration

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/openinof/inof"

// rel is a package's path inside the module ("" for the module itself).
func rel(pkg string) string { return strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/") }

// under reports whether the module-relative path p is dir or below it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// imports lists every package of the module with the module's packages it
// imports (module-relative paths).
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		var ours []string
		for _, imp := range fields[1:] {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				ours = append(ours, rel(imp))
			}
		}
		m[rel(fields[0])] = ours
	}
	return m
}

// bgpLayer is a package's layer inside bgp (docs/design.md §2): 1 the codec
// (bgp/record), 2 the speaker (bgp, bgp/bfd, and the test helpers over it,
// bgp/bgptest), 3 the tables (bgp/table); 0 outside bgp.
func bgpLayer(p string) int {
	switch {
	case under(p, "bgp/record"):
		return 1
	case under(p, "bgp/table"):
		return 3
	case under(p, "bgp"):
		return 2
	}
	return 0
}

// TestDependencyDirection guards the import rules of docs/design.md §2:
// cmd → app/<daemons> → {bgp, zones, l2proto, lossless, discovery} →
// inof (the vocabulary, in a folder of its own), and inside bgp:
// bgp/record ← bgp ← bgp/table.
func TestDependencyDirection(t *testing.T) {
	blocks := []string{"bgp", "zones", "l2proto", "porthealth"} // bgp/bfd counts as bgp
	libraries := []string{"lossless", "discovery"}
	blockOf := func(p string) string {
		for _, b := range blocks {
			if under(p, b) {
				return b
			}
		}
		return ""
	}
	libraryOf := func(p string) string {
		for _, l := range libraries {
			if under(p, l) {
				return l
			}
		}
		return ""
	}
	checked := 0
	for pkg, imps := range imports(t) {
		for _, imp := range imps {
			checked++
			switch {
			case pkg == "inof":
				t.Errorf("inof imports %s: the vocabulary imports nothing of ours", imp)
			case libraryOf(pkg) != "" && libraryOf(imp) != libraryOf(pkg):
				t.Errorf("%s imports %s: the domain libraries import nothing of ours", pkg, imp)
			case blockOf(pkg) != "" && blockOf(imp) != "" && blockOf(imp) != blockOf(pkg):
				t.Errorf("%s imports %s: building blocks never import each other", pkg, imp)
			case bgpLayer(pkg) != 0 && bgpLayer(imp) > bgpLayer(pkg):
				t.Errorf("%s imports %s: inside bgp, imports point down only (bgp/record ← bgp ← bgp/table)", pkg, imp)
			case blockOf(pkg) != "" && blockOf(imp) == "" && imp != "inof" && !under(imp, "internal"):
				t.Errorf("%s imports %s: building blocks import only the vocabulary and internal helpers", pkg, imp)
			case under(imp, "app") && !under(pkg, "app") && !under(pkg, "cmd") && !under(pkg, "integration"):
				t.Errorf("%s imports %s: only the commands and the whole-topology tests use the daemons' packages", pkg, imp)
			case under(pkg, "app/api") && blockOf(imp) == "bgp":
				t.Errorf("%s imports %s: the API serves what the daemons hand it, not BGP records", pkg, imp)
			case under(pkg, "app/console") && (blockOf(imp) != "" || under(imp, "app/reflector") || under(imp, "app/switchagent")):
				t.Errorf("%s imports %s: the console shows what the API answers, through the API's implementation only", pkg, imp)
			case under(pkg, "app/hostagent") && (blockOf(imp) == "bgp" || blockOf(imp) == "zones" || imp == "app/api"):
				t.Errorf("%s imports %s: the host agent talks to the fabric through app/api/apiclient only", pkg, imp)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no imports of this module seen: go list output not understood")
	}
	// The codec and the tables import no GoBGP package themselves: the
	// codec links none at all (TestLeanImports), the tables reach it
	// through bgp.Speaker only.
	for _, pkg := range []string{"bgp/record", "bgp/table"} {
		out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, module+"/"+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		imps := strings.Fields(string(out))
		if len(imps) == 0 {
			t.Fatalf("go list %s: no imports seen", pkg)
		}
		for _, imp := range imps {
			if strings.HasPrefix(imp, "github.com/osrg/gobgp/") {
				t.Errorf("%s imports %s: only the speaker (bgp) talks to GoBGP", pkg, imp)
			}
		}
	}
}

// TestLeanImports: the commands that run on hosts and at an admin's prompt
// do not link the daemon side. inofctl initialized GoBGP, bbolt, netlink and
// Prometheus at every start, which made each zone change a few
// milliseconds slower (issue #16, BenchmarkPrivZoneChange); a host binary
// has no business carrying a BGP stack or the zone store. The BGP record
// codec (bgp/record) links no GoBGP either: the speaker is the only layer
// that does.
func TestLeanImports(t *testing.T) {
	for cmd, heavy := range map[string][]string{
		"cmd/inofctl": {"github.com/osrg/gobgp/", "go.etcd.io/bbolt", "github.com/vishvananda/netlink",
			"github.com/prometheus/", "github.com/russross/blackfriday", module + "/bgp"},
		"cmd/inof-host": {"github.com/osrg/gobgp/", "go.etcd.io/bbolt", module + "/bgp", module + "/zones",
			module + "/app/api", module + "/app/reflector", module + "/app/switchagent"},
		// The record codec links neither GoBGP nor any other layer of bgp.
		"bgp/record": {"github.com/osrg/gobgp/", "google.golang.org/grpc", module + "/bgp"},
	} {
		out, err := exec.Command("go", "list", "-deps", module+"/"+cmd).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", cmd, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) == 0 {
			t.Fatalf("go list -deps %s: no packages", cmd)
		}
		for _, h := range heavy {
			for _, dep := range deps {
				// app/api/apiclient and app/api/v1 are the client side.
				if (dep == h || strings.HasPrefix(dep, h+"/") || (strings.HasSuffix(h, "/") && strings.HasPrefix(dep, h))) &&
					!under(rel(dep), cmd) &&
					!strings.HasPrefix(dep, module+"/app/api/") {
					t.Errorf("%s links %s", cmd, dep)
					break
				}
			}
		}
	}
}

// pkgImports is what one package and its tests import of this module
// (module-relative paths).
type pkgImports struct {
	imports []string // the package's own
	tests   []string // its tests' (in-package and external)
}

// testImports lists every package of the module, privileged tests
// included, with what it and its tests import of the module.
func testImports(t *testing.T) map[string]pkgImports {
	t.Helper()
	out, err := exec.Command("go", "list", "-tags", "privileged", "-f",
		`{{.ImportPath}} {{join .Imports " "}} | {{join .TestImports " "}} {{join .XTestImports " "}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	m := map[string]pkgImports{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		own, tests, _ := strings.Cut(line, "|")
		fields := strings.Fields(own)
		var p pkgImports
		for dst, list := range map[*[]string][]string{&p.imports: fields[1:], &p.tests: strings.Fields(tests)} {
			for _, imp := range list {
				if strings.HasPrefix(imp, module+"/") {
					*dst = append(*dst, rel(imp))
				}
			}
		}
		m[rel(fields[0])] = p
	}
	if len(m) == 0 {
		t.Fatal("go list printed no packages")
	}
	return m
}

// TestTestsImportNoHarness: outside integration/, no package and none of
// its tests (privileged ones included) imports a package of integration/;
// the helpers unit tests share (netns, selfexec) live in internal/.
func TestTestsImportNoHarness(t *testing.T) {
	for pkg, p := range testImports(t) {
		if under(pkg, "integration") {
			continue
		}
		for _, imp := range append(p.imports, p.tests...) {
			if under(imp, "integration") {
				t.Errorf("%s (or its tests) imports %s: harness code used outside integration/ belongs in internal/", pkg, imp)
			}
		}
	}
}

// TestTestHelpersOnlyInTests: a package of test helpers (docs/design.md
// §2) is imported by no package, only by the tests of the packages it
// serves.
func TestTestHelpersOnlyInTests(t *testing.T) {
	serves := map[string][]string{"bgp/bgptest": {"bgp", "bgp/table"}}
	used := map[string]bool{}
	for pkg, p := range testImports(t) {
		for _, imp := range p.imports {
			if serves[imp] != nil {
				t.Errorf("%s imports %s: test helpers are for tests only", pkg, imp)
			}
		}
		for _, imp := range p.tests {
			if serves[imp] == nil {
				continue
			}
			used[imp] = true
			if !slices.Contains(serves[imp], pkg) {
				t.Errorf("%s's tests import %s, which serves the tests of %v only", pkg, imp, serves[imp])
			}
		}
	}
	for h := range serves {
		if !used[h] {
			t.Errorf("no test imports %s: go list output not understood, or the helpers are dead", h)
		}
	}
}
