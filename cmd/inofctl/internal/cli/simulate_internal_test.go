package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// The progress bar stays silent for progressDelay of wall time, then
// redraws one line in place; finish clears it. The clock is a fake one.
func TestProgressBar(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	now := start
	var out bytes.Buffer
	bar := &progressBar{w: &out, start: start, now: func() time.Time { return now }}
	bar.update(time.Millisecond, 10*time.Millisecond)
	bar.finish()
	if out.Len() != 0 {
		t.Fatalf("short run drew %q", out.String())
	}
	now = start.Add(progressDelay)
	bar.update(5*time.Millisecond+123*time.Nanosecond, 10*time.Millisecond)
	want := "\r[" + strings.Repeat("#", 15) + strings.Repeat(" ", 15) + "]  50 %  5ms of 10ms simulated\x1b[K"
	if out.String() != want {
		t.Fatalf("bar %q, want %q", out.String(), want)
	}
	out.Reset()
	bar.update(10*time.Millisecond, 10*time.Millisecond)
	bar.finish()
	want = "\r[" + strings.Repeat("#", 30) + "] 100 %  10ms of 10ms simulated\x1b[K\r\x1b[K"
	if out.String() != want {
		t.Fatalf("full bar and finish %q, want %q", out.String(), want)
	}
}

// Only a character device counts as a terminal: never a buffer or a
// regular file, so redirected stderr gets no progress bar.
func TestIsTerminal(t *testing.T) {
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a regular file is a terminal")
	}
}
