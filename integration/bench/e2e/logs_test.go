package e2e

import (
	"regexp"
	"testing"
	"time"
)

func TestLogTime(t *testing.T) {
	re := regexp.MustCompile(`time=(\S+) level=WARN msg="BFD down: switch gone[^\n]*neighbor=10\.0\.0\.11 `)
	log := "time=2026-11-30T17:34:41.536Z level=INFO msg=\"BFD session state\"\n" +
		"time=2026-11-30T17:34:41.537Z level=WARN msg=\"BFD down: switch gone, shutting its session\" router_id=10.0.0.1 neighbor=10.0.0.12 diag=x\n" +
		"time=2026-11-30T17:34:42.001Z level=WARN msg=\"BFD down: switch gone, shutting its session\" router_id=10.0.0.1 neighbor=10.0.0.11 diag=x\n"
	got, ok := logTime(re, log)
	want := time.Date(2026, 11, 30, 17, 34, 42, 1e6, time.UTC)
	if !ok || !got.Equal(want) {
		t.Errorf("got %v %v, want %v", got, ok, want)
	}
	if _, ok := logTime(re, "nothing here"); ok {
		t.Error("found a time in a log without the line")
	}
	if _, ok := logTime(regexp.MustCompile(`time=(\S+) msg=x`), "time=yesterday msg=x"); ok {
		t.Error("parsed a bad time")
	}
}
