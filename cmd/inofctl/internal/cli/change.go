package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/app/api/zoningfile"
)

// changeFlags are the flags of every zoning change.
type changeFlags struct {
	yes      bool   // commit without asking
	stage    bool   // add to the staging file instead of committing
	fromFile string // members also from this file (member edits)
}

func (f *changeFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&f.yes, "yes", "y", false, "commit without asking")
	cmd.Flags().BoolVar(&f.stage, "stage", false, "stage the edit (see inofctl zoning diff|commit|abort) instead of committing it")
}

// registerMembers adds --from-file to a command that takes members.
func (f *changeFlags) registerMembers(cmd *cobra.Command) {
	f.register(cmd)
	cmd.Flags().StringVar(&f.fromFile, "from-file", "", "read more members from FILE (\"-\": standard input), one per line or comma-separated; # starts a comment")
}

// editor is the part of the command tree that changes the zoning: the edit
// commands and their flags, the staging file (staging.go), the commit with
// its preview and question, and declarative plans (declarative.go). The
// commands of the nouns that edit (zone, alias, pin, fabric, zoning)
// embed it.
type editor struct{ *app }

// editCommand is a zone or alias command that builds one edit from its
// arguments (NAME first); a command whose use names MEMBER takes members
// from the arguments, "-" and --from-file too.
func (a editor) editCommand(f *changeFlags, use, short string, args cobra.PositionalArgs, build func([]string) *inofv1.Edit) *cobra.Command {
	takesMembers := strings.Contains(use, "MEMBER")
	c := &cobra.Command{Use: use, Short: short, Args: args,
		RunE: a.change(f, func(args []string) ([]*inofv1.Edit, error) {
			if takesMembers {
				ms, err := a.members(f, args[1:])
				if err != nil {
					return nil, err
				}
				if len(ms) == 0 && !strings.Contains(use, "[MEMBER") {
					return nil, errors.New("no members: give MEMBER arguments, - for standard input, or --from-file")
				}
				seen := map[string]bool{}
				for _, m := range ms {
					if seen[m] {
						return nil, fmt.Errorf("member %s given twice", m)
					}
					seen[m] = true
				}
				args = append(args[:1:1], ms...)
			}
			return []*inofv1.Edit{build(args)}, nil
		})}
	if takesMembers {
		f.registerMembers(c)
	} else {
		f.register(c)
	}
	return c
}

// members returns the members of the command line: each MEMBER argument,
// "-" standing for the members on standard input, then those of
// --from-file.
func (a editor) members(f *changeFlags, args []string) ([]string, error) {
	var out []string
	for _, m := range args {
		if m != "-" {
			out = append(out, m)
			continue
		}
		ms, err := readMembers(a.io.In, "standard input")
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	switch f.fromFile {
	case "":
	case "-":
		ms, err := readMembers(a.io.In, "standard input")
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	default:
		fh, err := os.Open(f.fromFile)
		if err != nil {
			return nil, fmt.Errorf("--from-file: %w", err)
		}
		defer fh.Close()
		ms, err := readMembers(fh, f.fromFile)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// readMembers reads members one per line or comma-separated (CSV cells);
// blank cells and # comments are skipped.
func readMembers(r io.Reader, name string) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		for _, cell := range strings.Split(line, ",") {
			if m := strings.Trim(strings.TrimSpace(cell), `"`); m != "" {
				out = append(out, m)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("members from %s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("members from %s: none found", name)
	}
	return out, nil
}

// warnCatchAll warns of members that match every device of a family.
func warnCatchAll(w io.Writer, es []*inofv1.Edit) bool {
	found := false
	for _, e := range es {
		var ms []string
		switch x := e.GetEdit().(type) {
		case *inofv1.Edit_CreateZone:
			ms = x.CreateZone.GetMembers()
		case *inofv1.Edit_AddZoneMembers:
			ms = x.AddZoneMembers.GetMembers()
		case *inofv1.Edit_CreateAlias:
			ms = x.CreateAlias.GetMembers()
		case *inofv1.Edit_AddAliasMembers:
			ms = x.AddAliasMembers.GetMembers()
		}
		for _, m := range ms {
			if strings.HasSuffix(strings.TrimSpace(m), "/0") {
				fmt.Fprintf(w, "warning: member %s matches every device of its address family: all of them join, and see each other across it\n", m)
				found = true
			}
		}
	}
	return found
}

// change returns a command body that turns its arguments into edits and
// stages them or commits them.
func (a editor) change(f *changeFlags, edits func(args []string) ([]*inofv1.Edit, error)) func(*cobra.Command, []string) error {
	return a.run(func(ctx context.Context, c inofv1.FabricClient, args []string) error {
		es, err := edits(args)
		if err != nil {
			return err
		}
		if warnCatchAll(a.io.Err, es) && f.yes {
			fmt.Fprintln(a.io.Err, "(committed without asking: --yes)")
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
func (a editor) commit(ctx context.Context, c inofv1.FabricClient, es []*inofv1.Edit, rev string, yes bool) error {
	return a.commitAs(ctx, c, es, rev, "", yes, false)
}

// commitAs is commit with the journal's action ("" for commit); show
// makes it show the visibility changes even with yes.
func (a editor) commitAs(ctx context.Context, c inofv1.FabricClient, es []*inofv1.Edit, rev, action string, yes, show bool) error {
	if !yes || show {
		// Edits of zone and alias commands (not a plan, which printed
		// its diff) show the member diff too, computed on the
		// configuration the dry run checks them against.
		var before *inofv1.Zoning
		if action == "" {
			cur, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
			if err != nil {
				return err
			}
			before = cur
			if rev == "" {
				rev = cur.GetRevision()
			}
		}
		dry, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: es, ExpectedRevision: rev, DryRun: true, Action: action})
		if err != nil {
			return err
		}
		if before != nil {
			f := zoningfile.Of(before)
			printPlan(a.io.Err, zoningfile.PlanFor(f, zoningfile.After(f, es)))
		}
		printChanges(a.io.Err, dry.GetChanges())
		rev = dry.GetRevision()
	}
	if !yes {
		ok, err := confirm(a.io.In, a.io.Err, "Commit these changes?")
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("not committed")
		}
	}
	resp, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: es, ExpectedRevision: rev, Action: action})
	if err != nil {
		return err
	}
	v, err := plain(resp)
	if err != nil {
		return err
	}
	what := "committed"
	if action != "" {
		what += " (" + action + ")"
	}
	return a.printRev("ZoningChange", resp.GetRevision(), v, func(w io.Writer) {
		fmt.Fprintf(w, "%s: revision %s, %d record(s) written, %d visibility change(s)\n",
			what, resp.GetRevision(), resp.GetRecordsWritten(), len(resp.GetChanges()))
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
