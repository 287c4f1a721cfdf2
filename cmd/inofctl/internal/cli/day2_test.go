package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/cmd/inofctl/internal/cli"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// writeFile writes a file of the test (DIR/name in the transcript).
func (e *env) writeFile(name, content string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// TestDay2Walkthrough is docs/zoning.md's day-2 walkthrough as a golden
// transcript: export to a file, change and apply it (member and access
// diff, question), apply it again (no change), history, an old revision,
// diffs between revisions, rollback, audit with filters, backup, reverse
// lookups, bulk members, lossless set with its diff and history.
func TestDay2Walkthrough(t *testing.T) {
	e := newEnv(t)
	zoning := e.writeFile("zoning.yaml", `settings:
  default_zone: true
  hard_zoning: true
aliases:
  rack1: [10.0.2.1]
zones:
  red: [10.0.0.1, 10.0.1.1, alias:rack1]
  blue: [10.0.0.2, 10.0.1.2]
`)
	members := e.writeFile("members.csv", "# hosts of rack 7\n10.0.7.1, 10.0.7.2\n10.0.7.3\n\n")
	emptyProfile := e.writeFile("empty.yaml", "\n")
	var profile strings.Builder
	e.run("", "lossless", "show")
	y := strings.SplitN(e.out.String(), "\n", 2)[1]
	y = y[:strings.LastIndex(y, "[exit")]
	profile.WriteString(strings.Replace(y, "name: default", "name: site-a", 1))
	profilePath := e.writeFile("lossless.yaml", strings.TrimRight(profile.String(), "\n")+"\n")
	e.out.Reset()
	e.b.SetHeld(map[inof.RouterID]time.Time{inof.MustParseRouterID("192.0.2.2"): testTime.Add(87 * time.Second)})
	steps := []struct {
		stdin string
		args  string
		code  int
	}{
		{"", "zoning export", 0},
		{"y\n", "zoning apply -f " + zoning, 0},
		{"", "zoning apply -f " + zoning, 0}, // idempotent
		{"", "zoning export -f " + filepath.Join(e.dir, "exported.yaml"), 0},
		{"", "zone add blue --from-file " + members + " --yes", 0},
		{"10.0.8.1\n10.0.8.2,10.0.8.3\n", "zone add blue - --yes", 0},
		{"", "zone create everything 0.0.0.0/0", 1}, // warned, no answer: not committed
		{"", "zone list", 0},
		{"", "zone where 10.0.2.1", 0},
		{"", "zone where 10.0.7.2 -o json", 0},
		{"", "alias users rack1", 0},
		{"", "alias delete rack1 --yes", 1},
		{"", "device who-sees 10.0.1.1", 0},
		{"", "zone create bad nqn.bogus --yes", 1},
		{"", "zone create bad NQN.2014-08.org.example:a --yes", 1},
		{"", "zone create bad iqn.2001-04.com.example:disk --yes", 1},
		{"", "zoning history", 0},
		{"", "zoning show --revision 0000bad", 1},
		{"", "zoning show --revision 8a98727", 0}, // a prefix
		{"", "zoning diff 8a98727d11013d48 fa5f3625f22d2de5", 0},
		{"", "zoning diff 8a98727d11013d48", 0}, // to the configuration in effect
		{"n\n", "zoning rollback 8a98727d11013d48", 1},
		{"y\n", "zoning rollback 8a98727d11013d48", 0},
		{"", "zoning rollback 8a98727d11013d48 --yes", 0}, // already there
		{"", "zoning history", 0},                         // one row in effect: the rollback's
		{"", "zoning export --revision fa5f3625", 0},
		{"", "zoning history -o json", 0},
		{"", "audit --identity tester --action rollback -o yaml", 0}, // yaml: the pid in via varies in width
		{"", "audit --conflicts", 0},
		{"", "lossless set " + emptyProfile, 1},
		{"n\n", "lossless set " + profilePath, 1},
		{"", "lossless set " + profilePath + " --yes", 0},
		{"", "lossless set " + profilePath + " --yes", 0},
		{"", "lossless history", 0},
		{"", "fabric show -o json", 0},
		{"", "device list --switch 192.0.2.2", 0}, // held by graceful restart: stale, with the time left
		{"", "session list -o json", 0},
		{"", "backup " + filepath.Join(e.dir, "inof.backup"), 0},
	}
	for _, s := range steps {
		if code := e.run(s.stdin, strings.Fields(s.args)...); code != s.code {
			t.Errorf("inofctl %s: exit %d, want %d", s.args, code, s.code)
		}
	}
	if fi, err := os.Stat(filepath.Join(e.dir, "inof.backup")); err != nil || fi.Size() == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("backup file: %v %v", fi, err)
	}
	exported, err := os.ReadFile(filepath.Join(e.dir, "exported.yaml"))
	if err != nil || !strings.Contains(string(exported), "red:") {
		t.Errorf("exported file: %q %v", exported, err)
	}
	fmt.Fprintln(&e.out, "# end")
	e.golden("day2")
}

// TestStagingRebase: staged edits survive someone else's commit: diff
// shows them and says how to go on, rebase moves them, commit works.
func TestStagingRebase(t *testing.T) {
	e := newEnv(t)
	steps := []struct {
		stdin string
		args  string
		code  int
	}{
		{"", "zone create red 10.0.0.1 10.0.1.1 --yes", 0},
		{"", "zone add red 10.0.0.2 --stage", 0},
		{"", "zone create blue 10.0.1.2 --yes", 0}, // someone else
		{"", "zoning diff", 1},
		{"", "zoning commit --yes", 1},
		{"", "zoning rebase", 0},
		{"", "zoning diff", 0},
		{"", "zoning commit --yes", 0},
		{"", "zone remove red 10.0.0.2 --stage", 0},
		{"", "zone delete red --yes", 0}, // the staged edit can no longer apply
		{"", "zoning rebase", 1},
		{"", "zoning abort", 0},
	}
	for _, s := range steps {
		if code := e.run(s.stdin, strings.Fields(s.args)...); code != s.code {
			t.Errorf("inofctl %s: exit %d, want %d", s.args, code, s.code)
		}
	}
	e.golden("rebase")
}

// TestConflictReported: an edit made here and one made concurrently on
// another reflector (played by a second store whose records and journal
// entries this one merges, as replication does) are both in the audit
// trail, the lost one marked; audit --conflicts exits 3 until then.
func TestConflictReported(t *testing.T) {
	e := newEnv(t)
	peer, err := zones.Open(filepath.Join(t.TempDir(), "peer.db"), zones.StoreOptions{RouterID: 0x0a000002,
		Now: func() time.Time { return testTime }})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	sync := func(from, to *zones.Store) {
		t.Helper()
		j, err := from.Journal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := to.Apply(from.Records()); err != nil {
			t.Fatal(err)
		}
		if _, err := to.AddEntries(j); err != nil {
			t.Fatal(err)
		}
	}
	e.run("", "zone", "create", "x", "10.0.0.1", "--yes")
	e.run("", "audit", "--conflicts")
	sync(e.b.Store, peer)
	e.run("", "zone", "add", "x", "10.0.0.2", "--yes") // here, while the peer is cut off
	tx := peer.Begin()
	tx.Note(zones.Note{Identity: "user:bob", Via: "tls 192.0.2.9:40000", Action: zones.ActionCommit})
	if err := tx.AddZoneMembers("x", zones.MustParseMember("10.0.1.2")); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	sync(peer, e.b.Store) // the link is back
	sync(e.b.Store, peer)
	if code := e.run("", "audit", "--conflicts"); code != cli.ExitConflict {
		t.Errorf("audit --conflicts: exit %d, want %d", code, cli.ExitConflict)
	}
	e.run("", "audit", "-o", "yaml")
	e.run("", "zone", "show", "x")
	e.run("", "zone", "add", "x", "10.0.0.2", "--yes") // alice edits again, on what is in effect
	if code := e.run("", "audit", "--conflicts"); code != 0 {
		t.Errorf("after the new edit on top of the loss: exit %d, want 0 (listed as edited since)", code)
	}
	e.run("", "audit", "--identity", "tester", "--limit", "2", "-o", "yaml") // yaml: the pid in via varies in width
	e.golden("conflict")
}
