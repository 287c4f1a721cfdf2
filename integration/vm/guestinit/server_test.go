package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openinof/inof/integration/vm/internal/ctlproto"
)

// client is the test's end of a socket pair whose other end the server
// serves, as the virtio-serial port in a guest.
type client struct {
	t   *testing.T
	enc *json.Encoder
	dec *json.Decoder
}

func newClient(t *testing.T) *client {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "test"), os.NewFile(uintptr(fds[1]), "port")
	t.Cleanup(func() { mine.Close(); theirs.Close() })
	go newServer(theirs).serve()
	return &client{t: t, enc: json.NewEncoder(mine), dec: json.NewDecoder(mine)}
}

func (c *client) send(r ctlproto.Request) {
	c.t.Helper()
	if err := c.enc.Encode(r); err != nil {
		c.t.Fatal(err)
	}
}

// until reads replies until one for id is Done, and returns all of id's.
func (c *client) until(id uint64) []ctlproto.Reply {
	c.t.Helper()
	var got []ctlproto.Reply
	for {
		var r ctlproto.Reply
		if err := c.dec.Decode(&r); err != nil {
			c.t.Fatal(err)
		}
		if r.ID != id {
			continue
		}
		got = append(got, r)
		if r.Done {
			return got
		}
	}
}

// TestServer drives every operation of the control protocol over a socket
// pair: exit codes and output, a missing program, a file written, a
// background process whose output streams back until a signal ends it, an
// HTTP GET, files read in the init itself (with the reply's guest time),
// and an unknown operation.
func TestServer(t *testing.T) {
	c := newClient(t)

	c.send(ctlproto.Request{ID: 1, Op: ctlproto.OpRun, Argv: []string{"sh", "-c", "read x; echo out $x; echo err >&2; exit 3"},
		Stdin: []byte("in\n")})
	r := c.until(1)[0]
	if r.Code != 3 || string(r.Stdout) != "out in\n" || string(r.Stderr) != "err\n" || r.Error != "" {
		t.Errorf("run: %+v", r)
	}

	c.send(ctlproto.Request{ID: 2, Op: ctlproto.OpRun, Argv: []string{"/no/such/program"}})
	if r := c.until(2)[0]; r.Error == "" || r.Code != -1 {
		t.Errorf("missing program: %+v", r)
	}

	c.send(ctlproto.Request{ID: 3, Op: ctlproto.OpRun, Argv: []string{"sleep", "5"}, TimeoutMS: 100})
	if r := c.until(3)[0]; !strings.Contains(r.Error, "killed after") {
		t.Errorf("timed-out run: %+v", r)
	}

	path := filepath.Join(t.TempDir(), "a", "b")
	c.send(ctlproto.Request{ID: 4, Op: ctlproto.OpWrite, Path: path, Data: []byte("data"), Mode: 0o600})
	if r := c.until(4)[0]; r.Error != "" {
		t.Fatalf("write: %+v", r)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "data" {
		t.Errorf("written file: %q, %v", b, err)
	}
	c.send(ctlproto.Request{ID: 5, Op: ctlproto.OpWrite, Path: "relative", Data: []byte("x")})
	if r := c.until(5)[0]; r.Error == "" {
		t.Error("a relative path was written")
	}

	// A background shell prints, then waits for a signal; its trap
	// prints again and exits 7.
	c.send(ctlproto.Request{ID: 6, Op: ctlproto.OpStart,
		Argv: []string{"sh", "-c", "trap 'echo bye; exit 7' TERM; echo hello; while :; do sleep 0.05; done"}})
	var first ctlproto.Reply
	if err := c.dec.Decode(&first); err != nil || first.ID != 6 || !first.Started {
		t.Fatalf("start: %+v, %v", first, err)
	}
	time.Sleep(200 * time.Millisecond)
	c.send(ctlproto.Request{ID: 7, Op: ctlproto.OpSignal, Target: 6, Signal: int(syscall.SIGTERM)})
	var out strings.Builder
	var done ctlproto.Reply
	for done.ID == 0 {
		var r ctlproto.Reply
		if err := c.dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		switch {
		case r.ID == 6 && r.Done:
			done = r
		case r.ID == 6:
			out.Write(r.Output)
		case r.ID == 7 && r.Error != "":
			t.Errorf("signal: %+v", r)
		}
	}
	// The group signal also ends the sleep, which the shell may report.
	if o := out.String(); !strings.HasPrefix(o, "hello\n") || !strings.HasSuffix(o, "bye\n") || done.Code != 7 {
		t.Errorf("background process: output %q, exit %d", out.String(), done.Code)
	}
	c.send(ctlproto.Request{ID: 8, Op: ctlproto.OpSignal, Target: 6, Signal: int(syscall.SIGTERM)})
	if r := c.until(8)[0]; r.Error == "" {
		t.Error("a signal to an exited process reported no error")
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, "not yet")
	}))
	defer srv.Close()
	c.send(ctlproto.Request{ID: 9, Op: ctlproto.OpHTTP, URL: srv.URL + "/healthz"})
	if r := c.until(9)[0]; r.Status != 503 || string(r.Stdout) != "not yet" || r.Error != "" {
		t.Errorf("http: %+v", r)
	}

	dir := t.TempDir()
	for _, f := range []string{"nvme0/state", "nvme1/state", "nvme1/address"} {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := time.Now().UnixNano()
	c.send(ctlproto.Request{ID: 11, Op: ctlproto.OpRead, Argv: []string{dir + "/nvme*/state", dir + "/nvme1/address", dir + "/none"}})
	r = c.until(11)[0]
	want := map[string]string{dir + "/nvme0/state": "nvme0/state\n", dir + "/nvme1/state": "nvme1/state\n",
		dir + "/nvme1/address": "nvme1/address\n"}
	if r.Error != "" || fmt.Sprint(r.Files) != fmt.Sprint(want) {
		t.Errorf("read: %+v, want files %v", r, want)
	}
	if r.TimeNS < before || r.TimeNS > time.Now().UnixNano() {
		t.Errorf("reply time %d not between the request and now", r.TimeNS)
	}
	c.send(ctlproto.Request{ID: 12, Op: ctlproto.OpRead, Argv: []string{"["}})
	if r := c.until(12)[0]; r.Error == "" {
		t.Error("a bad glob pattern reported no error")
	}

	c.send(ctlproto.Request{ID: 10, Op: "reboot"})
	if r := c.until(10)[0]; !strings.Contains(r.Error, "unknown op") {
		t.Errorf("unknown op: %+v", r)
	}
}
