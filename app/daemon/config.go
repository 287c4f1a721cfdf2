package daemon

import (
	"log/slog"

	"github.com/openinof/inof/app/daemon/config"
)

// EnvPrefix is the prefix of every environment variable a daemon reads:
// the key log.level is INOF_LOG_LEVEL.
const EnvPrefix = config.EnvPrefix

// Validator is an options struct that checks itself and reports every
// problem it finds, joined (errors.Join), not just the first.
type Validator = config.Validator

// LoadOptions says where Load finds the configuration.
type LoadOptions = config.LoadOptions

// Load fills out (a pointer to the options struct, already holding the
// defaults) from, in rising precedence: the defaults, the YAML file,
// INOF_* environment variables, set flags (see config.Load, which it
// calls).
func Load(opts LoadOptions, out Validator) error { return config.Load(opts, out) }

// Warnings collects what Load warns about (LoadOptions.Warn) until the
// daemon's logger exists.
type Warnings []string

// Add appends one warning; pass it as LoadOptions.Warn.
func (w *Warnings) Add(msg string) { *w = append(*w, msg) }

// Log writes the warnings to log.
func (w Warnings) Log(log *slog.Logger) {
	for _, m := range w {
		log.Warn("configuration: " + m)
	}
}
