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
	"os"
	"slices"
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
	// Warn receives one message per deprecated key used (see Renamer);
	// nil drops them.
	Warn func(msg string)
}

// Renamer is an options struct some of whose keys were renamed: a value
// given under an old name (in the file or the environment) is taken for
// the new one, and Load warns about it. Giving both is an error.
type Renamer interface {
	// RenamedKeys maps old dotted keys to new ones ("bfd.min_tx" →
	// "bfd.desired_min_tx").
	RenamedKeys() map[string]string
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
	var renamed map[string]string
	if r, ok := out.(Renamer); ok {
		renamed = r.RenamedKeys()
	}
	warn := func(format string, a ...any) {
		if opts.Warn != nil {
			opts.Warn(fmt.Sprintf(format, a...))
		}
	}
	var errs []error
	if opts.File != "" {
		file, err := readFile(opts.File, renamed, warn)
		if err != nil {
			return err
		}
		if err := v.MergeConfig(bytes.NewReader(file)); err != nil {
			return fmt.Errorf("config: read %s: %w", opts.File, err)
		}
	}
	env := map[string]string{}
	for _, kv := range opts.Environ {
		if k, val, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, EnvPrefix+"_") {
			env[k] = val
		}
	}
	for _, old := range sortedKeys(renamed) {
		val, ok := env[envName(old)]
		if !ok {
			continue
		}
		if _, both := env[envName(renamed[old])]; both {
			errs = append(errs, fmt.Errorf("%s and %s: both set; %s is the old name of %s", envName(old),
				envName(renamed[old]), envName(old), envName(renamed[old])))
			continue
		}
		warn("%s is deprecated: use %s", envName(old), envName(renamed[old]))
		env[envName(renamed[old])] = val
	}
	for _, key := range v.AllKeys() {
		if val, ok := env[envName(key)]; ok {
			v.Set(key, val)
		}
	}
	if opts.Flags != nil {
		// Set flags win over the environment. Values go in as text; the
		// decoder converts them (numbers, booleans, durations). A list
		// flag goes in as its items: its String form ("[a,b]") is no list
		// to the decoder, which would split it into "[a" and "b]".
		opts.Flags.Visit(func(f *pflag.Flag) {
			key, ok := opts.FlagKeys[f.Name]
			if !ok {
				return
			}
			if sv, ok := f.Value.(pflag.SliceValue); ok {
				v.Set(key, sv.GetSlice())
				return
			}
			v.Set(key, f.Value.String())
		})
	}
	// Squash: embedded structs (`yaml:",inline"`) hold top-level keys.
	tag := func(c *mapstructure.DecoderConfig) { c.TagName, c.Squash = "yaml", true }
	// Fields that failed to decode keep their defaults, so validating
	// anyway lists the remaining problems too.
	derr := v.UnmarshalExact(out, tag)
	return errors.Join(append(errs, flattenDecodeErrors(derr), out.Validate())...)
}

// envName is the environment variable of a dotted key.
func envName(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))
}

// readFile reads a YAML configuration file and moves the values under
// renamed keys to their new names.
func readFile(path string, renamed map[string]string, warn func(string, ...any)) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	if len(renamed) == 0 {
		return raw, nil
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	var errs []error
	moved := false
	for _, old := range sortedKeys(renamed) {
		val, ok := take(doc, strings.Split(old, "."))
		if !ok {
			continue
		}
		nw := renamed[old]
		if !put(doc, strings.Split(nw, "."), val) {
			errs = append(errs, fmt.Errorf("%s and %s: both set; %s is the old name of %s", old, nw, old, nw))
			continue
		}
		warn("%s: key %s is deprecated: use %s", path, old, nw)
		moved = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if !moved {
		return raw, nil
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", path, err)
	}
	return out, nil
}

// take removes and returns the value at path in a decoded YAML mapping.
func take(m map[string]any, path []string) (any, bool) {
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			return nil, false
		}
		m = next
	}
	v, ok := m[path[len(path)-1]]
	if ok {
		delete(m, path[len(path)-1])
	}
	return v, ok
}

// put sets the value at path unless one is there already (false).
func put(m map[string]any, path []string, v any) bool {
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	if _, ok := m[path[len(path)-1]]; ok {
		return false
	}
	m[path[len(path)-1]] = v
	return true
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
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
