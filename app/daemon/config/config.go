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
	known := v.AllKeys()
	var renamed map[string]string
	if r, ok := out.(Renamer); ok {
		renamed = r.RenamedKeys()
	}
	// where says where each key's value came from, for the errors.
	where := map[string]string{}
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
		for k, line := range keyLines(file) {
			where[k] = fmt.Sprintf("%s:%d", opts.File, line)
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
	byEnv := map[string]string{}
	for _, key := range v.AllKeys() {
		byEnv[envName(key)] = key
		if val, ok := env[envName(key)]; ok {
			v.Set(key, val)
			where[key] = envName(key)
		}
	}
	for _, old := range sortedKeys(renamed) {
		byEnv[envName(old)] = old
	}
	for _, name := range sortedKeys(env) {
		if _, ok := byEnv[name]; ok {
			continue
		}
		var envs []string
		for _, k := range known {
			envs = append(envs, envName(k))
		}
		if near := closestWithin(name, envs, 2); near != "" {
			warn("%s is not a setting (did you mean %s?): ignored", name, near)
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
			where[key] = "--" + f.Name
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
	errs = append(errs, flattenDecodeErrors(derr, known, where), out.Validate())
	return placeErrors(errors.Join(errs...), where)
}

// keyLines maps the dotted keys of a YAML file (lists as key[i]) to the
// lines they are on.
func keyLines(file []byte) map[string]int {
	var doc yaml.Node
	if yaml.Unmarshal(file, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	out := map[string]int{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := strings.ToLower(n.Content[i].Value)
				if path != "" {
					k = path + "." + k
				}
				out[k] = n.Content[i].Line
				walk(n.Content[i+1], k)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				k := fmt.Sprintf("%s[%d]", path, i)
				out[k] = c.Line
				walk(c, k)
			}
		}
	}
	walk(doc.Content[0], "")
	return out
}

// placeErrors appends to each line of err that starts with a key (as
// "key: …" or "key \"value\"…") where that key's value came from: the
// file and line, the environment variable or the flag.
func placeErrors(err error, where map[string]string) error {
	if err == nil || len(where) == 0 {
		return err
	}
	lines := strings.Split(err.Error(), "\n")
	out := make([]error, 0, len(lines))
	for _, l := range lines {
		key := l
		if i := strings.IndexAny(l, ": "); i > 0 {
			key = l[:i]
		}
		if src, ok := where[strings.ToLower(key)]; ok && !strings.Contains(l, src) {
			l += " (" + sourceName(src) + ")"
		}
		out = append(out, errors.New(l))
	}
	return errors.Join(out...)
}

// sourceName words where a value came from.
func sourceName(src string) string {
	switch {
	case strings.HasPrefix(src, "--"):
		return "flag " + src
	case strings.HasPrefix(src, EnvPrefix+"_"):
		return "environment variable " + src
	}
	return "at " + src
}

// closest returns the candidate nearest to s (edit distance at most 2,
// or a third of s), or "".
func closest(s string, candidates []string) string {
	return closestWithin(s, candidates, max(2, len(s)/3))
}

// closestWithin returns the candidate nearest to s at an edit distance of
// at most limit, or "".
func closestWithin(s string, candidates []string, limit int) string {
	best, bestD := "", limit+1
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Closest returns the candidate nearest to s (a likely misspelling of it),
// or "": for "did you mean" hints.
func Closest(s string, candidates []string) string { return closest(s, candidates) }

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
func flattenDecodeErrors(err error, known []string, where map[string]string) error {
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
				msg := "unknown key " + at + k
				if near := closest(at+k, siblingKeys(known, at)); near != "" {
					msg += " (did you mean " + near + "?)"
				}
				if src, ok := where[strings.ToLower(at+k)]; ok {
					msg = src + ": " + msg
				}
				errs = append(errs, errors.New(msg))
			}
			continue
		}
		errs = append(errs, errors.New(keyFirst(s)))
	}
	return errors.Join(errs...)
}

// siblingKeys lists the known keys (and the sections holding them)
// directly under the section at ("" for the top, else "section.").
func siblingKeys(known []string, at string) []string {
	seen := map[string]bool{}
	var out []string
	for _, k := range known {
		rest, ok := strings.CutPrefix(k, at)
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, ".")
		if !seen[name] {
			seen[name] = true
			out = append(out, at+name)
		}
	}
	return out
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
