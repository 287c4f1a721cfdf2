package daemon

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Event lines are the lines a daemon writes per device event: a switch
// agent's "device registered", "device left" and "notify". At a few events
// a second each is worth its line; in a storm of thousands a second they
// cost the switch a tenth of its CPU in formatting alone, and under systemd
// they would run into journald's own rate limit (10,000 lines per 30 s per
// unit by default), which then drops every line of the unit, warnings
// included. So event lines share one budget: log.event_lines a second,
// after a burst of eventBurstSeconds times as many; the lines over it are
// counted, and the counts are logged once a second as one line per
// message ("event lines not logged one by one").
const (
	// eventBurstSeconds is how many seconds' worth of event lines may be
	// written back to back (the bucket's size).
	eventBurstSeconds = 10
	// eventSummaryDelay is how long after the first line held back its
	// count is logged.
	eventSummaryDelay = time.Second
	// DefaultEventLines is log.event_lines's default.
	DefaultEventLines = 100
)

// eventBudget is the budget every event line of a daemon draws on (a token
// bucket) and the counts of the lines held back, per message. It is safe
// for concurrent use; the summaries are logged from a timer's goroutine,
// outside the lock.
type eventBudget struct {
	now func() time.Time
	// out receives the summaries: the daemon's logger (it follows reloads).
	out slog.Handler

	mu       sync.Mutex
	rate     float64 // lines per second; 0: no budget
	tokens   float64
	last     time.Time // when tokens was last topped up
	held     map[string]int
	heldFrom time.Time // when the first of the held lines came
	order    []string  // messages held, first held first
	timer    *time.Timer
}

func newEventBudget(out slog.Handler, now func() time.Time) *eventBudget {
	return &eventBudget{out: out, now: now, held: map[string]int{}}
}

// setRate sets the lines per second (0: every line is written) and fills
// the bucket.
func (b *eventBudget) setRate(perSecond int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rate = float64(perSecond)
	b.tokens, b.last = b.rate*eventBurstSeconds, b.now()
}

// take reports whether a line with message msg may be written; if not it
// is counted, and a summary is due within eventSummaryDelay.
func (b *eventBudget) take(msg string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate == 0 {
		return true
	}
	now := b.now()
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.tokens+d.Seconds()*b.rate, b.rate*eventBurstSeconds)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	if len(b.order) == 0 {
		b.heldFrom = now
		if b.timer == nil {
			b.timer = time.AfterFunc(eventSummaryDelay, b.summarise)
		} else {
			b.timer.Reset(eventSummaryDelay)
		}
	}
	if b.held[msg] == 0 {
		b.order = append(b.order, msg)
	}
	b.held[msg]++
	return false
}

// summarise logs how many lines of each message were held back since the
// first of them, and starts counting anew.
func (b *eventBudget) summarise() {
	b.mu.Lock()
	type count struct {
		msg string
		n   int
	}
	counts := make([]count, 0, len(b.order))
	for _, m := range b.order {
		counts = append(counts, count{m, b.held[m]})
	}
	from, now := b.heldFrom, b.now()
	clear(b.held)
	b.order = b.order[:0]
	b.mu.Unlock()
	for _, c := range counts {
		r := slog.NewRecord(now, slog.LevelInfo, "event lines not logged one by one", 0)
		r.AddAttrs(slog.String("line", c.msg), slog.Int("count", c.n), slog.Time("since", from))
		if b.out.Enabled(context.Background(), slog.LevelInfo) {
			_ = b.out.Handle(context.Background(), r)
		}
	}
}

// eventHandler writes to next the records the budget allows, and every
// warning and error.
type eventHandler struct {
	next   slog.Handler
	budget *eventBudget
}

func (h *eventHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *eventHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn && !h.budget.take(r.Message) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *eventHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &eventHandler{next: h.next.WithAttrs(attrs), budget: h.budget}
}

func (h *eventHandler) WithGroup(name string) slog.Handler {
	return &eventHandler{next: h.next.WithGroup(name), budget: h.budget}
}
