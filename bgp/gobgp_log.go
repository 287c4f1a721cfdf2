package bgp

import (
	"context"
	"fmt"
	"log/slog"

	gobgplog "github.com/osrg/gobgp/v3/pkg/log"
)

// slogAdapter routes GoBGP's log calls to slog. GoBGP's Info is chatty
// (every peer event), so it maps to slog's Debug; its warnings and errors
// keep their level.
type slogAdapter struct {
	log   *slog.Logger
	level gobgplog.LogLevel
	// fatal, if set, gets GoBGP's fatal errors (the speaker stops).
	fatal func(error)
}

func (a *slogAdapter) emit(l slog.Level, msg string, fields gobgplog.Fields) {
	if !a.log.Enabled(context.Background(), l) {
		return
	}
	attrs := make([]slog.Attr, 0, len(fields))
	for k, v := range fields {
		attrs = append(attrs, slog.Any(k, v))
	}
	a.log.LogAttrs(context.Background(), l, msg, attrs...)
}

func (a *slogAdapter) Panic(msg string, f gobgplog.Fields) {
	a.emit(slog.LevelError, msg, f)
	panic(msg)
}

// Fatal reports GoBGP's internal-invariant failures instead of exiting the
// process (a daemon must not die from inside a library): the speaker stops
// and reports the error through Done and Err.
func (a *slogAdapter) Fatal(msg string, f gobgplog.Fields) {
	a.emit(slog.LevelError, "fatal: "+msg, f)
	if a.fatal != nil {
		a.fatal(fmt.Errorf("bgp: GoBGP fatal error: %s %v", msg, f))
	}
}
func (a *slogAdapter) Error(msg string, f gobgplog.Fields) { a.emit(slog.LevelError, msg, f) }
func (a *slogAdapter) Warn(msg string, f gobgplog.Fields) {
	if msg == msgNoMatchingWithdraw {
		// Expected between reflectors: the export policy rejects client
		// records toward a peer reflector, and GoBGP sends a withdraw for
		// every rejected path; the peer never had it.
		a.emit(slog.LevelDebug, msg, f)
		return
	}
	a.emit(slog.LevelWarn, msg, f)
}

const msgNoMatchingWithdraw = "No matching path for withdraw found, may be path was not installed into table"

func (a *slogAdapter) Info(msg string, f gobgplog.Fields) { a.emit(slog.LevelDebug, msg, f) }
func (a *slogAdapter) Debug(msg string, f gobgplog.Fields) {
	if a.level >= gobgplog.DebugLevel {
		a.emit(slog.LevelDebug-4, msg, f)
	}
}
func (a *slogAdapter) SetLevel(l gobgplog.LogLevel) { a.level = l }
func (a *slogAdapter) GetLevel() gobgplog.LogLevel  { return a.level }
