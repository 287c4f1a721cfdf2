package daemon

import (
	"context"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/internal/syncbuf"
)

// TestEventBudget: a burst of ten seconds' worth passes, then the rate;
// the lines over it are counted per message and summarised in the order
// they were first held; warnings always pass; rate 0 passes everything.
func TestEventBudget(t *testing.T) {
	var b syncbuf.Buffer
	out := slog.NewTextHandler(&b, nil)
	now := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	budget := newEventBudget(out, func() time.Time { return now })
	budget.setRate(2)
	log := slog.New(&eventHandler{next: out, budget: budget}).With("port", "p1")
	for i := range 25 {
		log.Info("notify", "i", i)
	}
	log.Info("device left")
	log.Warn("device left badly")
	if got := strings.Count(b.String(), "msg=notify"); got != 2*eventBurstSeconds {
		t.Fatalf("%d notify lines of a burst of 25 passed, want %d:\n%s", got, 2*eventBurstSeconds, b.String())
	}
	if !strings.Contains(b.String(), `msg="device left badly"`) {
		t.Errorf("a warning was held back:\n%s", b.String())
	}
	if strings.Contains(b.String(), `msg="device left" `) {
		t.Errorf("an info line over the budget passed:\n%s", b.String())
	}
	b.Reset()
	budget.summarise()
	want := "level=INFO msg=\"event lines not logged one by one\" line=notify count=5 since=2026-12-04T00:00:00.000Z\n" +
		"level=INFO msg=\"event lines not logged one by one\" line=\"device left\" count=1 since=2026-12-04T00:00:00.000Z\n"
	if got := b.String(); !strings.HasSuffix(strings.ReplaceAll(got, "time=2026-12-04T00:00:00.000Z ", ""), want) || strings.Count(got, "\n") != 2 {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
	b.Reset()
	budget.summarise()
	if b.String() != "" {
		t.Errorf("a summary with nothing held: %s", b.String())
	}
	now = now.Add(1500 * time.Millisecond) // three lines' worth
	for i := range 5 {
		log.Info("notify", "i", i)
	}
	if got := strings.Count(b.String(), "msg=notify"); got != 3 {
		t.Errorf("%d lines passed 1.5 s later at 2 a second, want 3:\n%s", got, b.String())
	}
	budget.setRate(0)
	b.Reset()
	for range 100 {
		log.Info("notify")
	}
	if got := strings.Count(b.String(), "msg=notify"); got != 100 {
		t.Errorf("rate 0 passed %d of 100 lines", got)
	}
}

// TestLoggingEventLines: the daemon's event logger holds back what is over
// log.event_lines, logs the count within about a second through the
// daemon's format, follows a reload, and leaves the other logger alone.
func TestLoggingEventLines(t *testing.T) {
	var b syncbuf.Buffer
	lg, err := NewLogging(&b, LogOptions{Level: "info", Format: "text", EventLines: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 * eventBurstSeconds {
		lg.Events().Info("device registered", "i", i)
		lg.Logger().Info("other", "i", i)
	}
	written := strings.Count(b.String(), `msg="device registered"`)
	if written < eventBurstSeconds {
		t.Fatalf("%d of %d event lines passed at 1 a second, fewer than the burst of %d:\n%s",
			written, 3*eventBurstSeconds, eventBurstSeconds, b.String())
	}
	if got := strings.Count(b.String(), "msg=other"); got != 3*eventBurstSeconds {
		t.Errorf("%d other lines passed, want all %d", got, 3*eventBurstSeconds)
	}
	if err := lg.Apply(LogOptions{Level: "info", Format: "json", EventLines: 0}); err != nil {
		t.Fatal(err)
	}
	// The held lines are counted, in the format of the moment the summary
	// is logged: written and counted make every line.
	summary := regexp.MustCompile(`(?:msg="event lines not logged one by one" line="device registered" count=|"msg":"event lines not logged one by one","line":"device registered","count":)(\d+)`)
	counted := 0
	deadline := time.Now().Add(time.Minute)
	for written+counted != 3*eventBurstSeconds {
		if time.Now().After(deadline) {
			t.Fatalf("%d event lines written and %d counted in a minute, want %d together:\n%s",
				written, counted, 3*eventBurstSeconds, b.String())
		}
		time.Sleep(10 * time.Millisecond)
		counted = 0
		for _, m := range summary.FindAllStringSubmatch(b.String(), -1) {
			n, _ := strconv.Atoi(m[1])
			counted += n
		}
	}
	b.Reset()
	for range 5 * eventBurstSeconds {
		lg.Events().Info("notify")
	}
	if got := strings.Count(b.String(), `"msg":"notify"`); got != 5*eventBurstSeconds {
		t.Errorf("event_lines 0 passed %d of %d lines", got, 5*eventBurstSeconds)
	}
	if err := (LogOptions{Level: "info", Format: "text", EventLines: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "log.event_lines -1") {
		t.Errorf("event_lines -1: %v", err)
	}
	if lg.Events().Enabled(context.Background(), slog.LevelDebug) {
		t.Error("the event logger is enabled at debug under level info")
	}
}
