package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openinof/inof/integration/bench/result"
)

func TestRunMergesAndWrites(t *testing.T) {
	dir := t.TempDir()
	if err := result.Write(dir, "a", []result.Row{{Group: "machine", Name: "load", Unit: "load", Value: 1},
		{Group: "end to end", Name: "x", Unit: "ms", N: 3, P50: 1, P99: 2, Max: 3}}); err != nil {
		t.Fatal(err)
	}
	if err := result.Write(dir, "b", []result.Row{{Group: "churn", Name: "y", Unit: "events/s", Value: 5000}}); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(dir, &out); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	e, c, m := strings.Index(table, "[end to end]"), strings.Index(table, "[churn]"), strings.Index(table, "[machine]")
	if e < 0 || c < 0 || m < 0 || !(e < c && c < m) {
		t.Errorf("table lacks a group or the machine is not last:\n%s", table)
	}
	rows, err := result.Merge(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	// a.json, b.json and bench.json holding both.
	if len(rows) != 6 {
		t.Errorf("%d rows in %s after the report, want 6", len(rows), dir)
	}
	// A second report must not count bench.json's rows again.
	out.Reset()
	if err := run(dir, &out); err != nil {
		t.Fatal(err)
	}
	if rows, _ := result.Merge(dir, "bench.json"); len(rows) != 3 {
		t.Errorf("%d rows besides bench.json, want 3", len(rows))
	}
	b, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil || strings.Count(string(b), `"group"`) != 3 {
		t.Errorf("bench.json after two reports: %v\n%s", err, b)
	}
}

func TestRunEmptyDir(t *testing.T) {
	if err := run(t.TempDir(), &strings.Builder{}); err == nil {
		t.Error("no error for a directory without rows")
	}
}

func TestRunBadFile(t *testing.T) {
	dir := t.TempDir()
	if err := result.Write(dir, "a", []result.Row{{Group: "g", Name: "x", Unit: "ms", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err := run(dir, &out)
	if err == nil || !strings.Contains(err.Error(), "broken.json") {
		t.Errorf("error %v, want one naming broken.json", err)
	}
	if !strings.Contains(out.String(), "[g]") {
		t.Errorf("the readable rows were not printed:\n%s", out.String())
	}
}
