package ratelimit

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	now := time.Unix(0, 0)
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, nil))
	r := NewLog(time.Second, func() time.Time { return now })
	wrote := 0
	for range 1000 {
		if r.Warn(l, "refused", "path", "x") {
			wrote++
		}
	}
	if !r.Warn(l, "other kind") {
		t.Error("another kind is held back by the first")
	}
	now = now.Add(time.Second)
	if !r.Warn(l, "refused") {
		t.Error("nothing written after the interval")
	}
	if wrote != 1 || !strings.Contains(buf.String(), "not_logged_since_last=999") {
		t.Errorf("wrote %d of 1000 at once; log:\n%s", wrote, buf.String())
	}
}
