package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"
)

// LogOptions configures the daemon's logger.
type LogOptions struct {
	Level  string `yaml:"level"`  // debug, info, warn or error
	Format string `yaml:"format"` // text or json
	// EventLines is how many lines a second the daemon writes about single
	// device events (a switch's "device registered", "device left",
	// "notify"), after a burst of ten seconds' worth; the others are
	// counted and their counts logged once a second (eventlog.go). 0:
	// every one is written.
	EventLines int `yaml:"event_lines"`
}

// DefaultLogOptions logs at info level as text, and at most
// DefaultEventLines event lines a second.
func DefaultLogOptions() LogOptions {
	return LogOptions{Level: "info", Format: "text", EventLines: DefaultEventLines}
}

// Validate reports every invalid field.
func (o LogOptions) Validate() error {
	var errs []error
	if _, err := parseLevel(o.Level); err != nil {
		errs = append(errs, err)
	}
	if f := strings.ToLower(o.Format); f != "text" && f != "json" {
		errs = append(errs, fmt.Errorf("log.format %q: want text or json", o.Format))
	}
	if o.EventLines < 0 {
		errs = append(errs, fmt.Errorf("log.event_lines %d: want 0 (every line) or more", o.EventLines))
	}
	return errors.Join(errs...)
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("log.level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// NewLogger returns a logger writing to w as the options say.
func NewLogger(w io.Writer, o LogOptions) (*slog.Logger, error) {
	lg, err := NewLogging(w, o)
	if err != nil {
		return nil, err
	}
	return lg.Logger(), nil
}

// Logging is a daemon's logger whose level and format can change while it
// runs (a reload): every logger derived from it (With, WithGroup), before
// or after the change, follows.
type Logging struct {
	w io.Writer
	// sink, if set, is w: records of level warn and above are written at
	// once, the others gathered (logsink.go).
	sink  *logSink
	level slog.LevelVar
	// base is the handler of the current format, without attributes.
	base atomic.Pointer[slog.Handler]
	log  *slog.Logger
	// budget limits the lines of events (Events).
	budget *eventBudget
	events *slog.Logger
}

// NewLogging returns a Logging writing to w as o says.
func NewLogging(w io.Writer, o LogOptions) (*Logging, error) {
	lg := &Logging{w: w}
	lg.log = slog.New(&switchHandler{lg: lg})
	lg.budget = newEventBudget(lg.log.Handler(), time.Now)
	lg.events = slog.New(&eventHandler{next: lg.log.Handler(), budget: lg.budget})
	if err := lg.Apply(o); err != nil {
		return nil, err
	}
	return lg, nil
}

// Logger returns the logger.
func (lg *Logging) Logger() *slog.Logger { return lg.log }

// Events returns the logger for lines about single device events: the
// same output, within log.event_lines a second.
func (lg *Logging) Events() *slog.Logger { return lg.events }

// Apply switches to o's level, format and event line budget.
func (lg *Logging) Apply(o LogOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	l, _ := parseLevel(o.Level)
	lg.level.Set(l)
	ho := &slog.HandlerOptions{Level: &lg.level}
	var h slog.Handler = slog.NewTextHandler(lg.w, ho)
	if strings.ToLower(o.Format) == "json" {
		h = slog.NewJSONHandler(lg.w, ho)
	}
	lg.base.Store(&h)
	lg.budget.setRate(o.EventLines)
	return nil
}

// switchHandler hands each record to the current base handler with the
// attributes and groups it was derived with.
type switchHandler struct {
	lg   *Logging
	with []func(slog.Handler) slog.Handler
	// built caches the derived handler for one base.
	built atomic.Pointer[builtHandler]
}

type builtHandler struct {
	base *slog.Handler
	h    slog.Handler
}

func (s *switchHandler) current() slog.Handler {
	base := s.lg.base.Load()
	if b := s.built.Load(); b != nil && b.base == base {
		return b.h
	}
	h := *base
	for _, f := range s.with {
		h = f(h)
	}
	s.built.Store(&builtHandler{base: base, h: h})
	return h
}

func (s *switchHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= s.lg.level.Level() }

func (s *switchHandler) Handle(ctx context.Context, r slog.Record) error {
	err := s.current().Handle(ctx, r)
	if r.Level >= slog.LevelWarn && s.lg.sink != nil {
		s.lg.sink.Flush()
	}
	return err
}

func (s *switchHandler) derive(f func(slog.Handler) slog.Handler) slog.Handler {
	with := append(append([]func(slog.Handler) slog.Handler(nil), s.with...), f)
	return &switchHandler{lg: s.lg, with: with}
}

func (s *switchHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return s
	}
	return s.derive(func(h slog.Handler) slog.Handler { return h.WithAttrs(attrs) })
}

func (s *switchHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return s
	}
	return s.derive(func(h slog.Handler) slog.Handler { return h.WithGroup(name) })
}
