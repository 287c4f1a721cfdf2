package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/encoding/protojson"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// staged is the content of the staging file: edits collected with --stage
// and the revision the first one was made against.
type staged struct {
	Server   string            `json:"server"`
	Revision string            `json:"revision"`
	Edits    []json.RawMessage `json:"edits"`
}

// readStaged reads the staging file; a missing file is an empty one.
func (a editor) readStaged() (*staged, []*inofv1.Edit, error) {
	b, err := os.ReadFile(a.opts.StagingFile)
	if errors.Is(err, fs.ErrNotExist) {
		return &staged{Server: a.opts.Server}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("staging file: %w", err)
	}
	var st staged
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, nil, fmt.Errorf("staging file %s: %w", a.opts.StagingFile, err)
	}
	if st.Server != a.opts.Server {
		return nil, nil, fmt.Errorf("staging file %s holds edits for %s, not %s: commit or abort them there", a.opts.StagingFile, st.Server, a.opts.Server)
	}
	es := make([]*inofv1.Edit, len(st.Edits))
	for i, raw := range st.Edits {
		es[i] = &inofv1.Edit{}
		if err := protojson.Unmarshal(raw, es[i]); err != nil {
			return nil, nil, fmt.Errorf("staging file %s: edit %d: %w", a.opts.StagingFile, i+1, err)
		}
	}
	return &st, es, nil
}

// stage checks the staged edits plus es with a dry run against the staged
// revision and, if they apply, adds es to the staging file.
func (a editor) stage(ctx context.Context, c inofv1.FabricClient, es []*inofv1.Edit) error {
	st, prev, err := a.readStaged()
	if err != nil {
		return err
	}
	all := append(prev, es...)
	dry, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: all, ExpectedRevision: st.Revision, DryRun: true})
	if err != nil {
		return err
	}
	st.Revision = dry.GetRevision()
	for _, e := range es {
		b, err := protojson.Marshal(e)
		if err != nil {
			return fmt.Errorf("encode edit: %w", err)
		}
		st.Edits = append(st.Edits, b)
	}
	if err := a.writeStaged(st); err != nil {
		return err
	}
	fmt.Fprintf(a.io.Out, "staged: %d edit(s) pending against revision %s (inofctl zoning diff | commit | abort)\n", len(all), st.Revision)
	return nil
}

// writeStaged writes the staging file.
func (a editor) writeStaged(st *staged) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode staging file: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(a.opts.StagingFile), 0o700); err != nil {
		return fmt.Errorf("staging file: %w", err)
	}
	if err := os.WriteFile(a.opts.StagingFile, b, 0o600); err != nil {
		return fmt.Errorf("staging file: %w", err)
	}
	return nil
}

// unstage removes the staging file.
func (a editor) unstage() error {
	if err := os.Remove(a.opts.StagingFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("staging file: %w", err)
	}
	return nil
}

// printEdits lists edits one per line.
func printEdits(w io.Writer, es []*inofv1.Edit) {
	for i, e := range es {
		fmt.Fprintf(w, "  %d. %s\n", i+1, describe(e))
	}
}
