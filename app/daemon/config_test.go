package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

type testOpts struct {
	Log    LogOptions    `yaml:"log"`
	Ports  []string      `yaml:"ports"`
	Listen string        `yaml:"listen"`
	Count  int           `yaml:"count"`
	Wait   time.Duration `yaml:"wait"`
	Inner  struct {
		Name string `yaml:"name"`
	} `yaml:"inner"`
	Items []struct {
		Name string `yaml:"name"`
	} `yaml:"items"`
}

func (o *testOpts) Validate() error {
	var errs []error
	if err := o.Log.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.Count < 0 {
		errs = append(errs, errors.New("count: must not be negative"))
	}
	if o.Listen == "bad" {
		errs = append(errs, errors.New("listen: bad"))
	}
	return errors.Join(errs...)
}

func defaults() *testOpts {
	return &testOpts{Log: DefaultLogOptions(), Listen: "default", Count: 1, Wait: time.Second}
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func flags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("listen", "default", "")
	fs.Int("count", 1, "")
	fs.String("log-level", "info", "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

var keys = map[string]string{"listen": "listen", "count": "count", "log-level": "log.level"}

// TestLoadPrecedence: defaults < file < INOF_* environment < set flags;
// flags left at their default do not override anything.
func TestLoadPrecedence(t *testing.T) {
	file := writeFile(t, "listen: file\ncount: 2\nwait: 3s\ninner:\n  name: file\nitems:\n  - name: a\n  - name: b\nlog:\n  format: json\n")
	o := defaults()
	err := Load(LoadOptions{File: file, Flags: flags(t, "--listen=flag"), FlagKeys: keys,
		Environ: []string{"INOF_COUNT=3", "INOF_INNER_NAME=env", "INOF_LISTEN=env", "OTHER_COUNT=9", "INOF_LOG_LEVEL=debug"}}, o)
	if err != nil {
		t.Fatal(err)
	}
	if o.Listen != "flag" || o.Count != 3 || o.Wait != 3*time.Second || o.Inner.Name != "env" ||
		len(o.Items) != 2 || o.Items[1].Name != "b" || o.Log.Format != "json" || o.Log.Level != "debug" {
		t.Fatalf("loaded %+v", *o)
	}
	// Without file, environment or flags the defaults stay.
	o = defaults()
	if err := Load(LoadOptions{Flags: flags(t)}, o); err != nil {
		t.Fatal(err)
	}
	if len(o.Items) == 0 {
		o.Items = nil // the defaults pass through YAML, where nil and empty are one
	}
	if len(o.Ports) == 0 {
		o.Ports = nil
	}
	if !reflect.DeepEqual(o, defaults()) {
		t.Fatalf("defaults changed: %+v", *o)
	}
}

// TestLoadListsEveryError: unknown keys, undecodable values and every
// validation error come back together.
func TestLoadListsEveryError(t *testing.T) {
	file := writeFile(t, "listen: bad\ncount: many\ncolour: red\ninner:\n  nmae: x\nlog:\n  level: loud\n  format: xml\n")
	err := Load(LoadOptions{File: file, Environ: []string{"INOF_WAIT=soon"}}, defaults())
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, want := range []string{"unknown key colour", "unknown key inner.nmae", "count: cannot parse as int", "wait: time: invalid duration", `log.level "loud"`,
		`log.format "xml"`, "listen: bad"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if n := len(strings.Split(msg, "\n")); n != 7 {
		t.Errorf("%d error lines, want 7:\n%s", n, msg)
	}
}

func TestLoadMissingFile(t *testing.T) {
	if err := Load(LoadOptions{File: filepath.Join(t.TempDir(), "none.yaml")}, defaults()); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestNewLogger(t *testing.T) {
	var b strings.Builder
	l, err := NewLogger(&b, LogOptions{Level: "warn", Format: "json"})
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hidden")
	l.Warn("shown", "k", 1)
	if s := b.String(); strings.Contains(s, "hidden") || !strings.Contains(s, `"msg":"shown"`) {
		t.Fatalf("log output %q", s)
	}
	if _, err := NewLogger(&b, LogOptions{Level: "x", Format: "y"}); err == nil || strings.Count(err.Error(), "\n") != 1 {
		t.Fatalf("want two errors, got %v", err)
	}
}

// TestLoadListFlag: a list flag's items arrive as the list, not as the
// pieces of its "[a,b]" text form (issue #25: --access-ports swp1,swp2 was
// ["[swp1" "swp2]"]).
func TestLoadListFlag(t *testing.T) {
	for args, want := range map[string][]string{
		"--ports=swp1,swp2":       {"swp1", "swp2"},
		"--ports=swp1":            {"swp1"},
		"--ports=a --ports=b,c":   {"a", "b", "c"},
		"--ports=eth0.100,swp1s0": {"eth0.100", "swp1s0"},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.StringSlice("ports", nil, "")
		if err := fs.Parse(strings.Fields(args)); err != nil {
			t.Fatal(err)
		}
		o := defaults()
		if err := Load(LoadOptions{Flags: fs, FlagKeys: map[string]string{"ports": "ports"}}, o); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(o.Ports, want) {
			t.Errorf("%s: ports %q, want %q", args, o.Ports, want)
		}
	}
}
