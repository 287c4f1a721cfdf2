package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/api/apitest"
	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/app/reflector"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/cmd/inofctl/internal/cli"
	"github.com/openinof/inof/zones"
)

// liveReflector is a reflector on real GoBGP with its admin API.
type liveReflector struct {
	r      *reflector.Reflector
	reg    *prometheus.Registry // its metrics
	opts   reflector.Options
	sock   string
	cancel context.CancelFunc
	done   chan error
}

func freeTCPPort(t *testing.T, a string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(a, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startLive runs a reflector on addr:port peering with peer:peerPort, its
// store in dir, and serves its API on a unix socket.
func startLive(t *testing.T, addr string, port int, dir string, peers ...reflector.PeerOptions) *liveReflector {
	t.Helper()
	o := reflector.DefaultOptions()
	o.MetricsListen, o.StateDir, o.ASN, o.RouterID, o.ClusterID = "", dir, 65000, addr, "10.255.255.1"
	o.BFD.Enabled = false
	o.LocalAddress = addr
	o.Listen = reflector.ListenOptions{Addresses: []string{addr}, Port: port}
	o.Reflectors = peers
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("INOF_TEST_LOG") != "" {
		log = slog.Default()
	}
	reg := prometheus.NewRegistry()
	r, err := reflector.New(reflector.Config{Options: o, Logger: log, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &liveReflector{r: r, reg: reg, opts: o, cancel: cancel, done: make(chan error, 1)}
	go func() { l.done <- r.Run(ctx) }()
	select {
	case <-r.Ready():
	case err := <-l.done:
		t.Fatalf("reflector %s: %v", addr, err)
	}
	_, l.sock = apitest.Serve(t, r.API(), api.ServeOptions{})
	t.Cleanup(l.stop)
	return l
}

func (l *liveReflector) stop() {
	if l.cancel == nil {
		return
	}
	l.cancel()
	<-l.done
	l.cancel = nil
}

// ctl runs inofctl against l and returns its output and exit code.
func (l *liveReflector) ctl(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Main(context.Background(), append([]string{"--server", "unix://" + l.sock}, args...),
		cli.IO{In: strings.NewReader(stdin), Out: &out, Err: &errb, Environ: []string{"HOME=" + t.TempDir()}})
	return out.String() + errb.String(), code
}

func (l *liveReflector) must(t *testing.T, args ...string) string {
	t.Helper()
	out, code := l.ctl(t, "", args...)
	if code != 0 {
		t.Fatalf("inofctl %s on %s: exit %d:\n%s", strings.Join(args, " "), l.opts.RouterID, code, out)
	}
	return out
}

// eventually polls cond until it holds or the time is up.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	within(t, 20*time.Second, what, cond)
}

// within is eventually with a time limit.
func within(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// journalJSON is a reflector's journal as `inofctl audit -o json` prints it.
func journalJSON(t *testing.T, l *liveReflector) string {
	t.Helper()
	return l.must(t, "audit", "-o", "json")
}

// upWith reports whether l's session with addr is established.
func upWith(l *liveReflector, addr string) bool {
	ns, err := l.r.Neighbors(context.Background())
	if err != nil {
		return false
	}
	for _, n := range ns {
		if n.Address.String() == addr {
			return n.State == bgp.StateEstablished
		}
	}
	return false
}

func established(l *liveReflector) bool {
	ns, err := l.r.Neighbors(context.Background())
	if err != nil {
		return false
	}
	for _, n := range ns {
		if n.State != bgp.StateEstablished {
			return false
		}
	}
	return len(ns) > 0
}

// TestTwoReflectorsDay2 is the end-to-end proof of issue #30 with two
// reflectors on real GoBGP over loopback, driven by inofctl through their
// APIs: a zoning file applied on r1 (and again: no change), an edit on r2,
// a rollback on r1; both reflectors answer the same history and audit;
// a backup of r1; a zone deleted on r2 after it; r1 replaced by a fresh
// reflector restored from the backup, which gets zoning and history back
// and, rejoining, keeps the zone deleted (r2 never sees it again).
func TestTwoReflectorsDay2(t *testing.T) {
	if raceEnabled {
		t.Skip("runs the real GoBGP, which races internally; run without -race")
	}
	// r3 is the reflector that replaces r1 later: r2 knows it from the
	// start (a replacement at the same address would wait out GoBGP's idle
	// hold time after the lost session, up to a minute).
	const a1, a2, a3 = "127.0.0.1", "127.0.0.2", "127.0.0.3"
	p1, p2, p3 := freeTCPPort(t, a1), freeTCPPort(t, a2), freeTCPPort(t, a3)
	peer := func(a string, p int) reflector.PeerOptions { return reflector.PeerOptions{Address: a, Port: p} }
	r1 := startLive(t, a1, p1, t.TempDir(), peer(a2, p2))
	r2 := startLive(t, a2, p2, t.TempDir(), peer(a1, p1), peer(a3, p3))
	eventually(t, "the reflectors peering", func() bool { return established(r1) && upWith(r2, a1) })

	file := filepath.Join(t.TempDir(), "zoning.yaml")
	if err := os.WriteFile(file, []byte("settings: {default_zone: true, hard_zoning: true}\n"+
		"aliases: {rack1: [10.0.2.1, 10.0.2.2]}\n"+
		"zones: {red: [10.0.0.1, alias:rack1], blue: [10.0.0.2, nqn.2014-08.org.example:array1]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := r1.must(t, "zoning", "apply", "-f", file, "--yes")
	if !strings.Contains(out, "committed (apply)") {
		t.Fatalf("apply: %s", out)
	}
	applied := strings.Fields(strings.SplitN(out, "revision ", 2)[1])[0]
	applied = strings.TrimSuffix(applied, ",")
	if out := r1.must(t, "zoning", "apply", "-f", file, "--yes"); !strings.Contains(out, "no change") {
		t.Fatalf("second apply: %s", out)
	}
	eventually(t, "the applied zoning on r2", func() bool {
		out, _ := r2.ctl(t, "", "zoning", "show")
		return strings.Contains(out, "revision "+applied)
	})
	// session list counts what r1 advertised to r2 (its configuration
	// copies), as numbers.
	eventually(t, "records advertised to r2", func() bool {
		var list struct {
			Kind  string
			Items []struct {
				Peer       string
				Advertised uint64
			}
		}
		if err := json.Unmarshal([]byte(r1.must(t, "session", "list", "-o", "json")), &list); err != nil || list.Kind != "SessionList" {
			t.Fatalf("session list -o json: kind %q, %v", list.Kind, err)
		}
		ss := list.Items
		return len(ss) == 1 && ss[0].Peer == a2 && ss[0].Advertised > 0
	})
	r2.must(t, "zone", "add", "red", "10.0.0.9", "--yes")
	eventually(t, "r2's edit on r1", func() bool {
		out, _ := r1.ctl(t, "", "zone", "show", "red")
		return strings.Contains(out, "10.0.0.9")
	})
	// Records and journal entries replicate separately: a rollback needs
	// the entries of every change since (else it is refused, Unavailable).
	eventually(t, "r2's journal entry on r1", func() bool {
		j := journalJSON(t, r1)
		return strings.Count(j, `"action"`) == 2 && j == journalJSON(t, r2)
	})
	if out := r1.must(t, "zoning", "rollback", applied, "--yes"); !strings.Contains(out, "revision "+applied) {
		t.Fatalf("rollback: %s", out)
	}
	// Both reflectors answer the same history and audit trail.
	var j1 string
	eventually(t, "the same journal on both reflectors", func() bool {
		j1 = journalJSON(t, r1)
		return j1 == journalJSON(t, r2) && strings.Count(j1, `"action"`) == 3
	})
	var env struct {
		Item struct {
			Entries []struct{ Action, Identity, Writer, Revision string }
		}
	}
	if err := json.Unmarshal([]byte(j1), &env); err != nil {
		t.Fatal(err)
	}
	audit := env.Item
	want := []string{"apply tester " + a1, "commit tester " + a2, "rollback tester " + a1}
	for i, e := range audit.Entries {
		if got := e.Action + " " + e.Identity + " " + e.Writer; got != want[i] {
			t.Errorf("entry %d: %s, want %s", i, got, want[i])
		}
	}
	if h1, h2 := r1.must(t, "zoning", "history"), r2.must(t, "zoning", "history"); h1 != h2 {
		t.Errorf("histories differ:\n%s\n%s", h1, h2)
	}

	// Back up r1, then delete blue on r2.
	backup := filepath.Join(t.TempDir(), "r1.backup")
	r1.must(t, "backup", backup)
	r2.must(t, "zone", "delete", "blue", "--yes")
	eventually(t, "the deletion on r1", func() bool {
		c, err := r1.r.Config()
		return err == nil && c.Zones["blue"] == nil
	})

	// r1 is lost; a fresh reflector with its address is restored from the
	// backup and joins.
	r1.stop()
	dir3 := t.TempDir()
	rep, err := reflector.Restore(reflector.Options{Common: daemon.Common{StateDir: dir3}, RouterID: a3, HistorySize: 100},
		reflector.RestoreOptions{Backup: backup, Identity: "user:tester", Via: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Zones != 2 || rep.Entries != 3 {
		t.Fatalf("restored %+v", rep)
	}
	r3 := startLive(t, a3, p3, dir3, peer(a2, p2))
	if c, _ := r3.r.Config(); c == nil {
		t.Fatal("restored reflector has no configuration")
	}
	begin := time.Now()
	eventually(t, "the restored reflector joining", func() bool { return established(r3) && upWith(r2, a3) })
	t.Logf("the restored reflector's session came up after %v", time.Since(begin))
	eventually(t, "the deletion on the restored reflector", func() bool {
		c, err := r3.r.Config()
		return err == nil && c.Zones["blue"] == nil && c.Zones["red"] != nil
	})
	// The restore, the history and the deletion made after the backup are
	// in both journals, which agree again.
	eventually(t, "the same journal after the restore", func() bool {
		j := journalJSON(t, r3)
		return j == journalJSON(t, r2) && strings.Count(j, `"action"`) == 5 && strings.Contains(j, `"restore"`)
	})
	time.Sleep(500 * time.Millisecond) // give a resurrection time to show
	for _, l := range []*liveReflector{r2, r3} {
		c, err := l.r.Config()
		if err != nil || c.Zones["blue"] != nil {
			t.Fatalf("%s: blue came back: %v %v", l.opts.RouterID, c.Zones["blue"], err)
		}
		if out := l.must(t, "zoning", "show", "--revision", applied); !strings.Contains(out, "zone blue") {
			t.Errorf("%s: the applied revision is not in the history any more:\n%s", l.opts.RouterID, out)
		}
	}
}

// TestTwoReflectorsStaleApply: two admins on two reflectors (real GoBGP
// over loopback). Alice exports on r1; Bob adds a member on r2; Alice
// edits her old export and applies it on r1: refused (exit 1), showing
// Bob's change, which stays. `zoning diff -f` shows the same and her edit;
// `apply --dry-run --force` commits nothing; `apply --force` states that
// it undoes the changes since and does, on both reflectors; an export
// taken after Bob's change applies without --force.
func TestTwoReflectorsStaleApply(t *testing.T) {
	if raceEnabled {
		t.Skip("runs the real GoBGP, which races internally; run without -race")
	}
	const a1, a2 = "127.0.0.1", "127.0.0.2"
	p1, p2 := freeTCPPort(t, a1), freeTCPPort(t, a2)
	peer := func(a string, p int) reflector.PeerOptions { return reflector.PeerOptions{Address: a, Port: p} }
	r1 := startLive(t, a1, p1, t.TempDir(), peer(a2, p2))
	r2 := startLive(t, a2, p2, t.TempDir(), peer(a1, p1))
	eventually(t, "the reflectors peering", func() bool { return established(r1) && established(r2) })
	r1.must(t, "zone", "create", "red", "10.0.0.1", "10.0.0.2", "--yes")
	eventually(t, "zone red on r2", func() bool {
		out, _ := r2.ctl(t, "", "zone", "show", "red")
		return strings.Contains(out, "10.0.0.2")
	})

	dir := t.TempDir()
	alice := filepath.Join(dir, "alice.yaml")
	r1.must(t, "zoning", "export", "-f", alice)
	exported, err := os.ReadFile(alice)
	if err != nil {
		t.Fatal(err)
	}
	r2.must(t, "zone", "add", "red", "10.0.0.9", "--yes") // Bob
	eventually(t, "Bob's member on r1", func() bool {
		out, _ := r1.ctl(t, "", "zoning", "show")
		return strings.Contains(out, "10.0.0.9")
	})
	eventually(t, "Bob's journal entry on r1", func() bool { return journalJSON(t, r1) == journalJSON(t, r2) })
	edited := strings.Replace(string(exported), "- 10.0.0.2\n", "- 10.0.0.2\n    - 10.0.0.3\n", 1)
	if edited == string(exported) {
		t.Fatalf("export without the member line:\n%s", exported)
	}
	if err := os.WriteFile(alice, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}

	out, code := r1.ctl(t, "", "zoning", "apply", "-f", alice, "--yes")
	t.Logf("stale apply (exit %d):\n%s", code, out)
	if code != 1 || !strings.Contains(out, "~ zone red: +10.0.0.9") || !strings.Contains(out, "--force") || strings.Contains(out, "committed") {
		t.Fatalf("stale apply: exit %d:\n%s", code, out)
	}
	out = r1.must(t, "zoning", "diff", "-f", alice)
	if !strings.Contains(out, "+10.0.0.9") || !strings.Contains(out, "+10.0.0.3 -10.0.0.9") {
		t.Fatalf("diff -f:\n%s", out)
	}
	out = r1.must(t, "zoning", "apply", "-f", alice, "--dry-run", "--force")
	if !strings.Contains(out, "dry run: nothing committed") || !strings.Contains(out, "--force: applying") {
		t.Fatalf("dry run:\n%s", out)
	}
	if out, _ := r2.ctl(t, "", "zone", "show", "red"); !strings.Contains(out, "10.0.0.9") || strings.Contains(out, "10.0.0.3") {
		t.Fatalf("refused and dry-run applies changed the zone:\n%s", out)
	}
	out = r1.must(t, "zoning", "apply", "-f", alice, "--force", "--yes")
	if !strings.Contains(out, "undoes the changes made since") || !strings.Contains(out, "committed (apply)") {
		t.Fatalf("forced apply:\n%s", out)
	}
	eventually(t, "the forced apply on r2", func() bool {
		out, _ := r2.ctl(t, "", "zone", "show", "red")
		return strings.Contains(out, "10.0.0.3") && !strings.Contains(out, "10.0.0.9")
	})

	// Her file, applied, then edited again: what changed since its export
	// is her own change, which it keeps; no --force needed.
	again := strings.Replace(edited, "- 10.0.0.3\n", "- 10.0.0.3\n    - 10.0.0.5\n", 1)
	if err := os.WriteFile(alice, []byte(again), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := r1.must(t, "zoning", "apply", "-f", alice, "--yes"); !strings.Contains(out, "committed (apply)") || strings.Contains(out, "undoes") {
		t.Fatalf("apply of her own file again:\n%s", out)
	}

	// A fresh export from r2 applies on r1 without --force.
	bob := filepath.Join(dir, "bob.yaml")
	eventually(t, "the same journal on both", func() bool { return journalJSON(t, r1) == journalJSON(t, r2) })
	r2.must(t, "zoning", "export", "-f", bob)
	fresh, err := os.ReadFile(bob)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bob, []byte(strings.Replace(string(fresh), "- 10.0.0.5\n", "- 10.0.0.5\n    - 10.0.0.4\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the same journal on both", func() bool { return journalJSON(t, r1) == journalJSON(t, r2) })
	if out := r1.must(t, "zoning", "apply", "-f", bob, "--yes"); !strings.Contains(out, "committed (apply)") || strings.Contains(out, "exported at") {
		t.Fatalf("fresh apply:\n%s", out)
	}
}

// TestTwoReflectorsFutureBackup: a reflector restored (only with
// --accept-future-clock) from a backup dated 2100 runs with its generation
// clock that far ahead, and its peer refuses its changes: that is visible
// in its metric (the alert InofReflectorClockAhead fires above 300 s), in
// the peer's refusal counter (InofReplicationRefused), and in inofctl's
// history and audit, which warn.
func TestTwoReflectorsFutureBackup(t *testing.T) {
	if raceEnabled {
		t.Skip("runs the real GoBGP, which races internally; run without -race")
	}
	future := func() time.Time { return time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC) }
	src, err := zones.Open(filepath.Join(t.TempDir(), "src.db"), zones.StoreOptions{RouterID: 1, Now: future})
	if err != nil {
		t.Fatal(err)
	}
	tx := src.Begin()
	if err := tx.CreateZone("red", zones.MustParseMember("10.0.0.1")); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "future.backup")
	f, err := os.Create(backup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Backup(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	src.Close()
	const a1, a2 = "127.0.0.1", "127.0.0.2"
	p1, p2 := freeTCPPort(t, a1), freeTCPPort(t, a2)
	dir := t.TempDir()
	ro := reflector.RestoreOptions{Backup: backup, Identity: "user:tester", Via: "test"}
	if _, err := reflector.Restore(reflector.Options{Common: daemon.Common{StateDir: dir}, RouterID: a1, HistorySize: 100}, ro); !errors.Is(err, zones.ErrFutureBackup) {
		t.Fatalf("future backup without --accept-future-clock: %v", err)
	}
	ro.AcceptFutureClock = true
	if _, err := reflector.Restore(reflector.Options{Common: daemon.Common{StateDir: dir}, RouterID: a1, HistorySize: 100}, ro); err != nil {
		t.Fatal(err)
	}
	peer := func(a string, p int) reflector.PeerOptions { return reflector.PeerOptions{Address: a, Port: p} }
	r := startLive(t, a1, p1, dir, peer(a2, p2))
	r2 := startLive(t, a2, p2, t.TempDir(), peer(a1, p1))
	eventually(t, "the reflectors peering", func() bool { return established(r) && established(r2) })
	r.must(t, "zone", "create", "blue", "10.0.0.2", "--yes")
	eventually(t, "r2 refusing r1's changes from the future", func() bool {
		return gauge(t, r2.reg, "inof_reflector_config_parts_refused_total", "future") > 0
	})
	if out, _ := r2.ctl(t, "", "zone", "list"); strings.Contains(out, "blue") {
		t.Fatalf("r2 took a change from 2100:\n%s", out)
	}
	if ahead := gauge(t, r2.reg, "inof_reflector_generation_clock_ahead_seconds", ""); ahead != 0 {
		t.Errorf("r2's clock is %v s ahead", ahead)
	}
	if ahead := gauge(t, r.reg, "inof_reflector_generation_clock_ahead_seconds", ""); ahead < time.Until(future()).Seconds()-3600 {
		t.Errorf("clock ahead %v s, want about %v s", ahead, time.Until(future()).Seconds())
	}
	for _, args := range [][]string{{"zoning", "history"}, {"audit"}} {
		out := r.must(t, args...)
		if !strings.Contains(out, "warning: the newest entry is dated 2100-01-01") || !strings.Contains(out, "peer reflectors refuse its changes") {
			t.Errorf("inofctl %s:\n%s", strings.Join(args, " "), out)
		}
	}

	// inofctl reflector list shows both reflectors side by side on each
	// side: r1's clock in 2100, its changes refused by r2 (held back
	// there), and r2 lacking them.
	minAhead := time.Until(future()) - 24*time.Hour
	var on1, on2 []listedReflector
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		on1, on2 = listReflectors(t, r), listReflectors(t, r2)
		if len(on1) == 2 && len(on2) == 2 && on2[1].DeferredParts > 0 && on1[1].BehindParts > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for r2 holding back r1's changes and r1 seeing r2 lack them: on r1 %+v, on r2 %+v", on1, on2)
		}
	}
	if self, peer := on1[0], on1[1]; !self.Self || self.RouterID != a1 || !self.RefusedByPeers || time.Duration(self.AheadMs)*time.Millisecond < minAhead ||
		!strings.HasPrefix(self.Clock, "2100-01-01") || self.Revision == "" || peer.RouterID != a2 || peer.Self || peer.RefusedFuture != 0 || peer.AheadMs != 0 {
		t.Errorf("reflector list on r1: %+v", on1)
	}
	if self, peer := on2[0], on2[1]; self.RouterID != a2 || self.RefusedByPeers || self.AheadMs != 0 ||
		peer.RouterID != a1 || peer.Address != a1 || !strings.HasPrefix(peer.Clock, "2100-01-01") ||
		time.Duration(peer.AheadMs)*time.Millisecond < minAhead || peer.RefusedFuture == 0 || peer.Writer != a1 {
		t.Errorf("reflector list on r2: %+v", on2)
	}
	for _, c := range []struct {
		l    *liveReflector
		want []string
	}{
		{r, []string{"127.0.0.1 (this)", "ahead: peers refuse its changes", "lacks", "warning: reflector 127.0.0.1's generation clock is"}},
		{r2, []string{"127.0.0.2 (this)", "refused-future (", "warning: reflector 127.0.0.1's generation clock is"}},
	} {
		out := c.l.must(t, "reflector", "list")
		t.Logf("inofctl reflector list on %s:\n%s", c.l.opts.RouterID, out)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("inofctl reflector list on %s lacks %q:\n%s", c.l.opts.RouterID, w, out)
			}
		}
	}
}

// listedReflector is a row of inofctl reflector list -o json.
type listedReflector struct {
	RouterID       string `json:"router_id"`
	Self           bool   `json:"self"`
	Address        string `json:"address"`
	Revision       string `json:"revision"`
	Clock          string `json:"clock"`
	AheadMs        int64  `json:"ahead_ms"`
	Writer         string `json:"writer"`
	BehindParts    int    `json:"behind_parts"`
	RefusedFuture  uint64 `json:"refused_future"`
	DeferredParts  int    `json:"deferred_parts"`
	RefusedByPeers bool   `json:"refused_by_peers"`
}

// listReflectors runs inofctl reflector list -o json on l.
func listReflectors(t *testing.T, l *liveReflector) []listedReflector {
	t.Helper()
	var resp struct {
		Item struct {
			Reflectors []listedReflector `json:"reflectors"`
		} `json:"item"`
	}
	out, code := l.ctl(t, "", "reflector", "list", "-o", "json")
	if code != 0 {
		t.Fatalf("inofctl reflector list on %s: exit %d:\n%s", l.opts.RouterID, code, out)
	}
	js, _, _ := strings.Cut(out, "\nwarning: ")
	if err := json.Unmarshal([]byte(js), &resp); err != nil {
		t.Fatalf("inofctl reflector list -o json on %s: %v:\n%s", l.opts.RouterID, err, out)
	}
	return resp.Item.Reflectors
}

// gauge returns the value of the series name (a gauge or a counter) in
// reg, the one with label value label if not "", or -1.
func gauge(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label != "" && !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetValue() == label }) {
				continue
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return -1
}
