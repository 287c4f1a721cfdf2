package daemon

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/internal/syncbuf"
)

func TestLogSinkGathers(t *testing.T) {
	var w syncbuf.Buffer
	s := newLogSink(&w, time.Hour, 32) // the timer never fires in this test
	if _, err := s.Write([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	s.Write([]byte("two\n"))
	if got := w.String(); got != "" {
		t.Fatalf("written before a flush: %q", got)
	}
	s.Flush()
	if got := w.String(); got != "one\ntwo\n" {
		t.Fatalf("after Flush: %q", got)
	}
	long := strings.Repeat("x", 40) + "\n" // over the size: written at once, whole
	s.Write([]byte(long))
	if got := w.String(); got != "one\ntwo\n"+long {
		t.Fatalf("a full buffer was not written: %q", got)
	}
	s.Write([]byte("three\n"))
	s.Close()
	s.Write([]byte("after\n")) // straight through
	if got := w.String(); got != "one\ntwo\n"+long+"three\nafter\n" {
		t.Fatalf("after Close: %q", got)
	}
}

func TestLogSinkFlushesAfterDelay(t *testing.T) {
	var w syncbuf.Buffer
	s := newLogSink(&w, time.Millisecond, 1<<20)
	defer s.Close()
	s.Write([]byte("line\n"))
	deadline := time.Now().Add(10 * time.Second)
	for w.String() != "line\n" {
		if time.Now().After(deadline) {
			t.Fatalf("the line was never written: %q", w.String())
		}
		time.Sleep(time.Millisecond)
	}
}

type failingWriter struct{}

func (failingWriter) Write(p []byte) (int, error) { return 0, errors.New("disk full") }

func TestLogSinkReportsWriteError(t *testing.T) {
	s := newLogSink(failingWriter{}, time.Hour, 8)
	if _, err := s.Write([]byte("0123456789\n")); err == nil {
		t.Error("a failed write of a full buffer was not reported")
	}
	s.Close()
}

// TestSetupWarningFlushes: a daemon's warning goes out at once, after the
// info lines gathered before it, in order.
func TestSetupWarningFlushes(t *testing.T) {
	var w syncbuf.Buffer
	defer slog.SetDefault(slog.Default()) // Setup makes its logger the default
	p, err := Setup(&w, "test", DefaultLogOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	log := p.Log.With("k", "v")
	log.Info("first")
	log.Warn("second")
	got := w.String()
	i, j := strings.Index(got, "msg=first"), strings.Index(got, "msg=second")
	if i < 0 || j < i {
		t.Fatalf("after a warning the log is %q, want the info line then the warning", got)
	}
	log.Info("third")
	p.Close()
	if !strings.Contains(w.String(), "msg=third") {
		t.Fatalf("Close did not write the gathered line: %q", w.String())
	}
}
