package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

type inner struct {
	Name string `yaml:"name"`
}

type opts struct {
	ASN   uint32 `yaml:"asn"`
	Inner inner  `yaml:"inner"`
	Log   struct {
		Level string `yaml:"level"`
	} `yaml:"log"`
}

func (o *opts) Validate() error {
	if o.Log.Level != "info" && o.Log.Level != "debug" {
		return errors.New(`log.level "` + o.Log.Level + `": want info or debug`)
	}
	return nil
}

// TestLoadSaysWhere: each error names where the value came from (the
// file and line, the environment variable, the flag); an unknown key its
// line and the key it likely meant; a misspelt INOF_* variable is warned
// about with the variable it likely meant.
func TestLoadSaysWhere(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(file, []byte("inner:\n  nmae: x\nlgo:\n  level: info\nlog:\n  level: loud\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	o := &opts{}
	o.Log.Level = "info"
	err := Load(LoadOptions{File: file, Environ: []string{"INOF_ASN=abc", "INOF_INNER_NAM=y", "INOF_SOAK_SEED=1"},
		Warn: func(m string) { warnings = append(warnings, m) }}, o)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		file + ":2: unknown key inner.nmae (did you mean inner.name?)",
		file + ":3: unknown key lgo (did you mean log?)",
		"asn: cannot parse", "(environment variable INOF_ASN)",
		`log.level "loud": want info or debug (at ` + file + ":6)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if len(warnings) != 1 || warnings[0] != "INOF_INNER_NAM is not a setting (did you mean INOF_INNER_NAME?): ignored" {
		t.Errorf("warnings %q", warnings)
	}

	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.String("log-level", "", "")
	if err := fs.Parse([]string{"--log-level", "trace"}); err != nil {
		t.Fatal(err)
	}
	o = &opts{}
	err = Load(LoadOptions{Flags: fs, FlagKeys: map[string]string{"log-level": "log.level"}}, o)
	if err == nil || !strings.Contains(err.Error(), `log.level "trace": want info or debug (flag --log-level)`) {
		t.Errorf("flag: %v", err)
	}
}
