package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	inofv1 "github.com/openinof/inof/inof/api/v1"
)

// changeFlags are the flags of every zoning change.
type changeFlags struct {
	yes   bool // commit without asking
	stage bool // add to the staging file instead of committing
}

func (f *changeFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&f.yes, "yes", "y", false, "commit without asking")
	cmd.Flags().BoolVar(&f.stage, "stage", false, "stage the edit (see inofctl zoning diff|commit|abort) instead of committing it")
}

// change returns a command body that turns its arguments into edits and
// stages them or commits them.
func (a *app) change(f *changeFlags, edits func(args []string) ([]*inofv1.Edit, error)) func(*cobra.Command, []string) error {
	return a.run(func(ctx context.Context, c inofv1.FabricClient, args []string) error {
		es, err := edits(args)
		if err != nil {
			return err
		}
		if f.stage {
			return a.stage(ctx, c, es)
		}
		return a.commit(ctx, c, es, "", f.yes)
	})
}

// commit dry-runs the edits against rev ("" for the current
// configuration), shows the visibility changes, asks, and commits them if
// the configuration is still the one shown. With yes nothing is shown, so
// there is no dry run: the edits are committed at once against rev (or,
// if "", the configuration in effect then; the server runs them in one
// transaction, so nothing can slip in between).
func (a *app) commit(ctx context.Context, c inofv1.FabricClient, es []*inofv1.Edit, rev string, yes bool) error {
	if !yes {
		dry, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: es, ExpectedRevision: rev, DryRun: true})
		if err != nil {
			return err
		}
		printChanges(a.io.Err, dry.GetChanges())
		ok, err := confirm(a.io.In, a.io.Err, "Commit these changes?")
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("not committed")
		}
		rev = dry.GetRevision()
	}
	resp, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: es, ExpectedRevision: rev})
	if err != nil {
		return err
	}
	v, err := plain(resp)
	if err != nil {
		return err
	}
	return a.print(v, func(w io.Writer) {
		fmt.Fprintf(w, "committed: revision %s, %d record(s) written, %d visibility change(s)\n",
			resp.GetRevision(), resp.GetRecordsWritten(), len(resp.GetChanges()))
	})
}

// printChanges lists the visibility changes of a dry run.
func printChanges(w io.Writer, cs []*inofv1.VisibilityChange) {
	if len(cs) == 0 {
		fmt.Fprintln(w, "No host gains or loses a target.")
		return
	}
	fmt.Fprintf(w, "%d visibility change(s):\n", len(cs))
	for _, ch := range cs {
		verb := "loses"
		sign := "-"
		if ch.GetVisible() {
			verb, sign = "gains", "+"
		}
		fmt.Fprintf(w, "  %s host %s %s target %s\n", sign, ch.GetHost(), verb, ch.GetTarget())
	}
}

// confirm asks a yes/no question on w and reads the answer from r; no
// answer (end of input) is no.
func confirm(r io.Reader, w io.Writer, q string) (bool, error) {
	fmt.Fprintf(w, "%s [y/N] ", q)
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("read answer: %w", err)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	if errors.Is(err, io.EOF) && line == "" {
		fmt.Fprintln(w, "\n(no answer on standard input; use --yes to commit without asking)")
	}
	return false, nil
}
