package daemon

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// LogOptions configures the daemon's logger.
type LogOptions struct {
	Level  string `yaml:"level"`  // debug, info, warn or error
	Format string `yaml:"format"` // text or json
}

// DefaultLogOptions logs at info level as text.
func DefaultLogOptions() LogOptions { return LogOptions{Level: "info", Format: "text"} }

// Validate reports every invalid field.
func (o LogOptions) Validate() error {
	var errs []error
	if _, err := parseLevel(o.Level); err != nil {
		errs = append(errs, err)
	}
	if f := strings.ToLower(o.Format); f != "text" && f != "json" {
		errs = append(errs, fmt.Errorf("log.format %q: want text or json", o.Format))
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
	if err := o.Validate(); err != nil {
		return nil, err
	}
	l, _ := parseLevel(o.Level)
	ho := &slog.HandlerOptions{Level: l}
	if strings.ToLower(o.Format) == "json" {
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	}
	return slog.New(slog.NewTextHandler(w, ho)), nil
}
