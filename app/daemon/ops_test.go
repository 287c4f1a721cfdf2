package daemon

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/internal/syncbuf"
)

// TestLoggingApply: a level or format change reaches every logger derived
// before it (With, WithGroup) as well as after.
func TestLoggingApply(t *testing.T) {
	var b syncbuf.Buffer
	lg, err := NewLogging(&b, LogOptions{Level: "info", Format: "text"})
	if err != nil {
		t.Fatal(err)
	}
	port := lg.Logger().With("port", "swp1").WithGroup("g")
	port.Debug("hidden")
	port.Info("as text", "k", 1)
	if err := lg.Apply(LogOptions{Level: "debug", Format: "json"}); err != nil {
		t.Fatal(err)
	}
	port.Debug("as json", "k", 2)
	lg.Logger().Info("root")
	out := b.String()
	for _, want := range []string{`level=INFO msg="as text" port=swp1 g.k=1`, `"msg":"as json","port":"swp1","g":{"k":2}`, `"msg":"root"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hidden") {
		t.Error("a debug line at level info")
	}
	if err := lg.Apply(LogOptions{Level: "loud", Format: "json"}); err == nil {
		t.Fatal("invalid options applied")
	}
}

// TestPlanReload: changed keys are sorted into live and restart; a list is
// one key; a key that needs a restart stays named on later reloads until
// the restart.
func TestPlanReload(t *testing.T) {
	type opts struct {
		Log   LogOptions `yaml:"log"`
		Port  int        `yaml:"port"`
		Ports []string   `yaml:"ports"`
	}
	live := []string{"log.", "ports"}
	start := opts{Log: DefaultLogOptions(), Port: 1, Ports: []string{"a"}}
	next := opts{Log: LogOptions{Level: "debug", Format: "text", EventLines: DefaultEventLines}, Port: 2, Ports: []string{"a", "b"}}
	p, err := PlanReload(start, start, next, live)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, ReloadPlan{Live: []string{"log.level", "ports"}, Restart: []string{"port"}}) {
		t.Fatalf("plan %+v", p)
	}
	p, _ = PlanReload(start, next, next, live)
	if len(p.Live) != 0 || !reflect.DeepEqual(p.Restart, []string{"port"}) {
		t.Fatalf("second reload of the same file: %+v", p)
	}
}

// TestLiveReload: the reload loads fresh options, applies them and keeps
// the plan against what is in force; an invalid load applies nothing.
func TestLiveReload(t *testing.T) {
	type opts struct {
		Level string `yaml:"level"`
		Port  int    `yaml:"port"`
	}
	file := opts{Level: "info", Port: 1}
	var applied []opts
	reload := LiveReload(file, func() opts { return opts{} }, func(o *opts) error {
		if file.Level == "bad" {
			return errors.New("invalid")
		}
		*o = file
		return nil
	}, []string{"level"}, func(_ context.Context, o opts) error { applied = append(applied, o); return nil })
	file = opts{Level: "debug", Port: 2}
	p, err := reload(context.Background())
	if err != nil || !reflect.DeepEqual(p.Live, []string{"level"}) || !reflect.DeepEqual(p.Restart, []string{"port"}) {
		t.Fatalf("plan %+v err %v", p, err)
	}
	file.Level = "bad"
	if _, err := reload(context.Background()); err == nil || len(applied) != 1 {
		t.Fatalf("invalid reload: err %v, applied %v", err, applied)
	}
}

// TestNotifier: messages reach the socket NOTIFY_SOCKET names, a path or
// an abstract name; the watchdog interval is read for this process only;
// without NOTIFY_SOCKET nothing is sent.
func TestNotifier(t *testing.T) {
	for _, name := range []string{filepath.Join(t.TempDir(), "notify"), "@inof-test-notify-" + t.Name()} {
		c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		n, err := NewNotifier([]string{"NOTIFY_SOCKET=" + name, "WATCHDOG_USEC=4000000"})
		if err != nil {
			t.Fatal(err)
		}
		if n.Watchdog() != 4*time.Second {
			t.Fatalf("watchdog %s", n.Watchdog())
		}
		if err := n.Send("READY=1", "STATUS=serving"); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 256)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		k, err := c.Read(buf)
		if err != nil || string(buf[:k]) != "READY=1\nSTATUS=serving\n" {
			t.Fatalf("%s: got %q %v", name, buf[:k], err)
		}
		c.Close()
	}
	n, err := NewNotifier([]string{"NOTIFY_SOCKET=/x", "WATCHDOG_USEC=1000", "WATCHDOG_PID=1"})
	if err != nil || n.Watchdog() != 0 {
		t.Fatalf("another process's watchdog: %v %v", n.Watchdog(), err)
	}
	var none *Notifier
	if none.Enabled() || none.Send("READY=1") != nil {
		t.Fatal("nil notifier")
	}
	if _, err := NewNotifier([]string{"NOTIFY_SOCKET=relative"}); err == nil {
		t.Fatal("relative socket accepted")
	}
}
