package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"

	inofv1 "github.com/openinof/inof/inof/api/v1"
	"github.com/openinof/inof/inof/api/zoningfile"
)

// encodeFile writes f as YAML with a header naming its revision.
func encodeFile(w io.Writer, f zoningfile.File, revision string) error {
	fmt.Fprintf(w, "# inofctl zoning export: revision %s\n# Edit, review, then: inofctl zoning apply -f FILE\n", revision)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	return enc.Close()
}

// readZoningFile reads a zoning file ("-": standard input). Unknown keys
// are errors (a typo must not silently mean "no zones").
func readZoningFile(path string, stdin io.Reader) (zoningfile.File, error) {
	var r io.Reader = stdin
	if path != "-" {
		fh, err := os.Open(path)
		if err != nil {
			return zoningfile.File{}, fmt.Errorf("zoning file: %w", err)
		}
		defer fh.Close()
		r = fh
	}
	var f zoningfile.File
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return zoningfile.File{}, fmt.Errorf("zoning file %s is empty", path)
		}
		return zoningfile.File{}, fmt.Errorf("zoning file %s: %w", path, err)
	}
	if f.Settings.DefaultZone == nil || f.Settings.HardZoning == nil {
		return zoningfile.File{}, fmt.Errorf("zoning file %s: settings.default_zone and settings.hard_zoning must be set (inofctl zoning export writes them)", path)
	}
	return f, nil
}

// printPlan shows the member diff.
func printPlan(w io.Writer, p zoningfile.Plan) {
	fmt.Fprintf(w, "%d zoning change(s):\n", len(p.Diff))
	for _, l := range p.Diff {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// applyPlan shows the member diff and the access diff (a dry run), asks
// (unless yes), and commits the plan at the revision it was made against.
func (a *app) applyPlan(ctx context.Context, c inofv1.FabricClient, p zoningfile.Plan, rev, action string, yes bool) error {
	printPlan(a.io.Err, p)
	warnCatchAll(a.io.Err, p.Edits)
	return a.commitAs(ctx, c, p.Edits, rev, action, yes, true)
}
