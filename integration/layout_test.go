package integration

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/openinof/inof"

// TestDependencyDirection guards DESIGN §2: cmd → inof/<daemons> →
// {bgp, zones, l2proto} → inof. The three building blocks never import each
// other (bgp/bfd counts as bgp) or any inof sub-package, and inof imports
// nothing of this module.
func TestDependencyDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	block := func(pkg string) string {
		rel := strings.TrimPrefix(pkg, module+"/")
		for _, b := range []string{"bgp", "zones", "l2proto"} {
			if rel == b || strings.HasPrefix(rel, b+"/") {
				return b
			}
		}
		return ""
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		for _, imp := range imports {
			if !strings.HasPrefix(imp, module+"/") && imp != module {
				continue
			}
			checked++
			switch {
			case pkg == module+"/inof":
				t.Errorf("inof imports %s: the vocabulary imports nothing of ours", imp)
			case block(pkg) != "" && block(imp) != "" && block(imp) != block(pkg):
				t.Errorf("%s imports %s: building blocks never import each other", pkg, imp)
			case block(pkg) != "" && strings.HasPrefix(imp, module+"/inof/"):
				t.Errorf("%s imports %s: building blocks import only the vocabulary", pkg, imp)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no imports of this module seen: go list output not understood")
	}
}
