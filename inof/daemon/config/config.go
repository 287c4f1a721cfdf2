// Package config loads a program's options in layers: defaults, a YAML
// file, INOF_* environment variables and set flags. It is the part of
// package daemon a short-lived command (inofctl) needs, without the
// daemon's metrics and HTTP dependencies, whose package initialization
// would cost every run of the command milliseconds.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/mitchellh/mapstructure"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"gopkg.in/yaml.v3"
)

// EnvPrefix is the prefix of every environment variable a daemon reads:
// the key log.level is INOF_LOG_LEVEL.
const EnvPrefix = "INOF"

// Validator is an options struct that checks itself and reports every
// problem it finds, joined (errors.Join), not just the first.
type Validator interface {
	Validate() error
}

// LoadOptions says where Load finds the configuration.
type LoadOptions struct {
	// File is the YAML file; empty means defaults, environment and flags only.
	File string
	// Flags holds the command-line flags; only those the user set override
	// the file and the environment.
	Flags *pflag.FlagSet
	// FlagKeys maps a flag name to the configuration key it sets
	// ("log-level" → "log.level").
	FlagKeys map[string]string
	// Environ is the environment as "KEY=value" entries (os.Environ()).
	// Only scalar keys can be set this way, not lists.
	Environ []string
}

// Load fills out (a pointer to the options struct, already holding the
// defaults) from, in rising precedence: the defaults, the YAML file,
// INOF_* environment variables, set flags. Struct fields are named by their
// yaml tags; keys nest with "." (env: "_"). Unknown keys in the file, values
// of the wrong type and every error of out's Validate are returned together.
func Load(opts LoadOptions, out Validator) error {
	v := viper.New()
	v.SetConfigType("yaml")
	// The defaults go in as a config layer so that viper knows every key,
	// which the environment lookup needs.
	def, err := yaml.Marshal(out)
	if err != nil {
		return fmt.Errorf("config: encode defaults: %w", err)
	}
	if err := v.ReadConfig(bytes.NewReader(def)); err != nil {
		return fmt.Errorf("config: defaults: %w", err)
	}
	if opts.File != "" {
		v.SetConfigFile(opts.File)
		if err := v.MergeInConfig(); err != nil {
			return fmt.Errorf("config: read %s: %w", opts.File, err)
		}
	}
	env := map[string]string{}
	for _, kv := range opts.Environ {
		if k, val, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, EnvPrefix+"_") {
			env[k] = val
		}
	}
	for _, key := range v.AllKeys() {
		name := EnvPrefix + "_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))
		if val, ok := env[name]; ok {
			v.Set(key, val)
		}
	}
	if opts.Flags != nil {
		// Set flags win over the environment. Values go in as text; the
		// decoder converts them (numbers, booleans, durations).
		opts.Flags.Visit(func(f *pflag.Flag) {
			if key, ok := opts.FlagKeys[f.Name]; ok {
				v.Set(key, f.Value.String())
			}
		})
	}
	tag := func(c *mapstructure.DecoderConfig) { c.TagName = "yaml" }
	// Fields that failed to decode keep their defaults, so validating
	// anyway lists the remaining problems too.
	derr := v.UnmarshalExact(out, tag)
	return errors.Join(flattenDecodeErrors(derr), out.Validate())
}

// flattenDecodeErrors turns mapstructure's multi-error into a joined error,
// so that each problem prints on its own line.
// Messages are reworded to name keys as the file does.
func flattenDecodeErrors(err error) error {
	var me *mapstructure.Error
	if !errors.As(err, &me) {
		return err
	}
	errs := make([]error, 0, len(me.Errors))
	for _, s := range me.Errors {
		if at, keys, ok := strings.Cut(s, " has invalid keys: "); ok {
			if at = strings.Trim(at, "'"); at != "" {
				at += "."
			}
			for _, k := range strings.Split(keys, ", ") {
				errs = append(errs, fmt.Errorf("unknown key %s%s", at, k))
			}
			continue
		}
		errs = append(errs, errors.New(keyFirst(s)))
	}
	return errors.Join(errs...)
}

// keyFirst rewrites mapstructure's "error decoding 'k': msg" and
// "cannot parse 'k' as int: msg" as "k: ...".
func keyFirst(s string) string {
	if rest, ok := strings.CutPrefix(s, "error decoding '"); ok {
		if k, msg, ok := strings.Cut(rest, "': "); ok {
			return k + ": " + msg
		}
	}
	before, rest, ok := strings.Cut(s, " '")
	if !ok {
		return s
	}
	k, after, ok := strings.Cut(rest, "'")
	if !ok {
		return s
	}
	return k + ": " + before + after
}
