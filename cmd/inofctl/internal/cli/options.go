package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/openinof/inof/app/api/apiclient"
)

// Options is the whole configuration of inofctl: defaults, then the YAML
// file (--config), then INOF_* environment variables (INOF_SERVER, …), then
// flags.
type Options struct {
	// Server is the API address: unix:///path (default) or host:port (TLS
	// with a bearer token).
	Server string `yaml:"server"`
	// TokenFile holds the bearer token for a TCP server.
	TokenFile string `yaml:"token_file"`
	// CAFile verifies a TCP server's certificate (system roots if empty).
	CAFile string `yaml:"ca_file"`
	// ServerName overrides the name checked in the server's certificate.
	ServerName string `yaml:"server_name"`
	// CertFile and KeyFile are a TLS client certificate and its key (TCP
	// only): the identity the reflector knows this admin by.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// Output is the format: table, wide (the table with more columns),
	// json or yaml.
	Output string `yaml:"output"`
	// NoHeaders leaves the heading row out of tables.
	NoHeaders bool `yaml:"no_headers"`
	// Timeout bounds each call (not events --follow).
	Timeout time.Duration `yaml:"timeout"`
	// StagingFile holds the zoning edits staged with --stage until
	// `zoning commit` or `zoning abort`.
	StagingFile string `yaml:"staging_file"`
}

// defaultOptions returns the defaults; the staging file lives in the
// user's state directory taken from environ.
func defaultOptions(environ []string) Options {
	return Options{
		Server:      "unix://" + apiclient.DefaultSocket,
		Output:      "table",
		Timeout:     10 * time.Second,
		StagingFile: filepath.Join(stateDir(environ), "inofctl", "staged.json"),
	}
}

// Validate implements config.Validator.
func (o *Options) Validate() error {
	var errs []string
	switch o.Output {
	case "table", "wide", "json", "yaml":
	default:
		errs = append(errs, fmt.Sprintf("output %q: want table, wide, json or yaml", o.Output))
	}
	if o.Server == "" {
		errs = append(errs, "server: must be set")
	}
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Sprintf("timeout %s: must be positive", o.Timeout))
	}
	if o.StagingFile == "" {
		errs = append(errs, "staging_file: must be set")
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// flagKeys maps each global flag to the configuration key it sets.
var flagKeys = map[string]string{
	"server":       "server",
	"token-file":   "token_file",
	"ca-file":      "ca_file",
	"server-name":  "server_name",
	"cert-file":    "cert_file",
	"key-file":     "key_file",
	"output":       "output",
	"no-headers":   "no_headers",
	"timeout":      "timeout",
	"staging-file": "staging_file",
}

// lookup returns the value of key in environ.
func lookup(environ []string, key string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// stateDir is $XDG_STATE_HOME, else $HOME/.local/state, else the working
// directory.
func stateDir(environ []string) string {
	if d := lookup(environ, "XDG_STATE_HOME"); d != "" {
		return d
	}
	if h := lookup(environ, "HOME"); h != "" {
		return filepath.Join(h, ".local", "state")
	}
	return "."
}

// defaultConfigFile is $XDG_CONFIG_HOME/inofctl/config.yaml, else
// $HOME/.config/inofctl/config.yaml (used only if it exists).
func defaultConfigFile(environ []string) string {
	if d := lookup(environ, "XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "inofctl", "config.yaml")
	}
	if h := lookup(environ, "HOME"); h != "" {
		return filepath.Join(h, ".config", "inofctl", "config.yaml")
	}
	return ""
}
