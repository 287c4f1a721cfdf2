package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/app/api/zoningfile"
	"github.com/openinof/inof/inof"
)

// ExitConflict is the exit code of `inofctl audit --conflicts` when the
// journal holds conflicts (edits lost to concurrent writes).
const ExitConflict = 3

// exitError makes a command that ran end with a given exit code.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// zoningDeclarativeCommands are export, apply, history, rollback and rebase.
func (a zoningCmds) zoningDeclarativeCommands() []*cobra.Command {
	var file string
	export := &cobra.Command{Use: "export [-f FILE]", Short: "Write the whole zoning configuration as one YAML file (settings, aliases, zones)",
		Long: "Writes the committed configuration (or the one of --revision) in the form `zoning apply -f`\n" +
			"reads: keep it in git, review changes like code, apply them.",
		Args: cobra.NoArgs}
	var exportRev string
	var exportForce bool
	export.RunE = a.run(func(ctx context.Context, c inofv1.FabricClient, _ []string) error {
		z, err := a.zoningAt(ctx, c, exportRev)
		if err != nil {
			return err
		}
		if file == "" || file == "-" {
			return encodeFile(a.io.Out, zoningfile.Of(z), z.GetRevision())
		}
		out, err := a.createOutput(file, 0o644, exportForce)
		if err != nil {
			return err
		}
		defer out.abort()
		if err := encodeFile(out, zoningfile.Of(z), z.GetRevision()); err != nil {
			return err
		}
		if err := out.commit(); err != nil {
			return err
		}
		fmt.Fprintf(a.io.Err, "exported revision %s to %s\n", z.GetRevision(), file)
		return nil
	})
	export.Flags().StringVarP(&file, "file", "f", "", "write to FILE instead of standard output (written beside and renamed; an existing FILE only when you say so)")
	export.Flags().BoolVar(&exportForce, "force", false, "overwrite FILE without asking")
	export.Flags().StringVar(&exportRev, "revision", "", "export this retained revision (zoning history)")

	var af fileApply
	apply := &cobra.Command{Use: "apply -f FILE", Short: "Make the zoning configuration what FILE says (shows the member and access diff, asks)",
		Long: "Compares FILE (an `inofctl zoning export`, \"-\" for standard input) with the committed\n" +
			"configuration, shows which zones and aliases change and which hosts gain or lose which\n" +
			"targets, asks, and commits it all in one transaction. Applying the same file again changes\n" +
			"nothing. With -f - the question cannot be read from standard input: use --yes.\n" +
			"A file exported at another revision than the one in effect (its first line names it)\n" +
			"would undo what changed since: that is shown and the apply refused, unless --force.\n" +
			"--dry-run shows it all and commits nothing (so does `zoning diff -f FILE`).",
		Args: cobra.NoArgs,
		RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, _ []string) error {
			if af.path == "" {
				return errors.New("-f FILE is required")
			}
			return a.applyFile(ctx, c, af)
		})}
	apply.Flags().StringVarP(&af.path, "file", "f", "", "the zoning file (\"-\": standard input)")
	apply.Flags().BoolVarP(&af.yes, "yes", "y", false, "commit without asking")
	apply.Flags().BoolVar(&af.force, "force", false, "apply a file exported at another revision than the one in effect, undoing the changes since")
	apply.Flags().BoolVar(&af.dryRun, "dry-run", false, "show the member and access diff, commit nothing")

	var rbYes bool
	rollback := &cobra.Command{Use: "rollback REVISION", Short: "Commit a retained revision's configuration again (with the same diff and question)",
		Args: cobra.ExactArgs(1), ValidArgsFunction: a.completeRevisions,
		RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, args []string) error {
			old, err := c.GetRevision(ctx, &inofv1.GetRevisionRequest{Revision: args[0]})
			if err != nil {
				return err
			}
			cur, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
			if err != nil {
				return err
			}
			p := zoningfile.PlanFor(zoningfile.Of(cur), zoningfile.Of(old))
			if len(p.Edits) == 0 {
				fmt.Fprintf(a.io.Out, "no change: revision %s is the configuration in effect\n", old.GetRevision())
				return nil
			}
			fmt.Fprintf(a.io.Err, "rolling back to revision %s\n", old.GetRevision())
			return a.applyPlan(ctx, c, p, cur.GetRevision(), "rollback", rbYes)
		})}
	rollback.Flags().BoolVarP(&rbYes, "yes", "y", false, "commit without asking")

	var limit uint32
	history := &cobra.Command{Use: "history", Short: "List the committed zoning revisions: time, identity, what changed",
		Args: cobra.NoArgs,
		RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, _ []string) error {
			resp, err := c.ListJournal(ctx, &inofv1.ListJournalRequest{ZoningOnly: true, Limit: limit})
			if err != nil {
				return err
			}
			cur, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
			if err != nil {
				return err
			}
			return journalCmds{a.app}.printJournal(resp, cur.GetRevision(), true)
		})}
	history.Flags().Uint32Var(&limit, "limit", 0, "show only the newest N revisions")

	rebase := &cobra.Command{Use: "rebase", Short: "Move the staged edits onto the configuration in effect (after someone else committed)",
		Args: cobra.NoArgs,
		RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, _ []string) error {
			st, es, err := a.readStaged()
			if err != nil {
				return err
			}
			if len(es) == 0 {
				return errors.New("nothing staged")
			}
			old := st.Revision
			st.Revision = ""
			if err := a.writeStaged(st); err != nil {
				return err
			}
			dry, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: es, DryRun: true})
			if err != nil {
				st.Revision = old
				if werr := a.writeStaged(st); werr != nil {
					return errors.Join(err, werr)
				}
				fmt.Fprintln(a.io.Err, "the staged edits do not apply to the configuration in effect (kept as they were; `zoning abort` drops them):")
				return err
			}
			st.Revision = dry.GetRevision()
			if err := a.writeStaged(st); err != nil {
				return err
			}
			fmt.Fprintf(a.io.Out, "rebased: %d staged edit(s) moved from revision %s to %s\n", len(es), old, st.Revision)
			printChanges(a.io.Out, dry.GetChanges())
			return nil
		})}
	return []*cobra.Command{export, apply, history, rollback, rebase}
}

// zoningAt returns the committed configuration, or a retained revision's.
func (a zoningCmds) zoningAt(ctx context.Context, c inofv1.FabricClient, rev string) (*inofv1.Zoning, error) {
	if rev == "" {
		return c.GetZoning(ctx, &inofv1.GetZoningRequest{})
	}
	return c.GetRevision(ctx, &inofv1.GetRevisionRequest{Revision: rev})
}

// zoningRevisionDiff prints what turns revision r1 into r2 (r2 "": the
// configuration in effect).
func (a zoningCmds) zoningRevisionDiff(ctx context.Context, c inofv1.FabricClient, r1, r2 string) error {
	from, err := a.zoningAt(ctx, c, r1)
	if err != nil {
		return err
	}
	to, err := a.zoningAt(ctx, c, r2)
	if err != nil {
		return err
	}
	p := zoningfile.PlanFor(zoningfile.Of(from), zoningfile.Of(to))
	out := map[string]any{"from": from.GetRevision(), "to": to.GetRevision(), "changes": p.Diff}
	if p.Diff == nil {
		out["changes"] = []string{}
	}
	return a.print("ZoningDiff", out, func(w io.Writer) {
		fmt.Fprintf(w, "from revision %s to %s: ", from.GetRevision(), to.GetRevision())
		if len(p.Diff) == 0 {
			fmt.Fprintln(w, "no change")
			return
		}
		fmt.Fprintf(w, "%d change(s)\n", len(p.Diff))
		for _, l := range p.Diff {
			fmt.Fprintf(w, "  %s\n", l)
		}
	})
}

// journalCmds are inofctl audit and inofctl backup, the commands of the
// reflector's store and its journal, and the journal's printing (which
// zoning history shares).
type journalCmds struct{ *app }

// printJournal prints journal entries (and the conflicts); current marks
// the revision in effect in the history.
func (a journalCmds) printJournal(resp *inofv1.ListJournalResponse, current string, history bool) error {
	v, err := plain(resp)
	if err != nil {
		return err
	}
	conflicted := map[string]string{}
	for _, c := range resp.GetConflicts() {
		for _, id := range c.GetEntries() {
			conflicted[id] = "CONFLICT (lost) "
		}
		for _, id := range c.GetResolved() {
			conflicted[id] = "conflict (lost, edited since) "
		}
	}
	a.warnFutureEntries(resp.GetEntries())
	return a.print("Journal", v, func(w io.Writer) {
		if history {
			a.header(w, "", "REVISION", "TIME", "IDENTITY", "ACTION", "SUMMARY")
		} else {
			a.header(w, "TIME", "IDENTITY", "VIA", "ACTION", "REVISION", "WRITER", "SUMMARY")
		}
		// The revision in effect is the newest entry that produced it: a
		// rollback's entry produces an older one's revision again.
		inEffect := -1
		for i, e := range resp.GetEntries() {
			if current != "" && e.GetRevision() == current {
				inEffect = i
			}
		}
		for i, e := range resp.GetEntries() {
			t := stamp(e.GetTime().AsTime())
			sum := e.GetSummary()
			sum = conflicted[e.GetId()] + sum
			if history {
				mark := ""
				if i == inEffect {
					mark = "*"
				}
				row(w, mark, e.GetRevision(), t, e.GetIdentity(), e.GetAction(), sum)
			} else {
				row(w, t, e.GetIdentity(), e.GetVia(), e.GetAction(), e.GetRevision(), e.GetWriter(), sum)
			}
		}
		for _, c := range resp.GetConflicts() {
			if len(c.GetEntries()) > 0 {
				fmt.Fprintf(w, "conflict: the edits of %s to %s were lost to a concurrent one; %s is in effect\n",
					strings.Join(c.GetEntries(), ", "), c.GetObject(), c.GetKept())
			}
		}
	})
}

// warnFutureEntries warns when the newest journal entry is dated ahead of
// this host's clock by more than inof.MaxGenerationSkew: the reflector's
// generation clock is ahead (a backup from the future restored, a clock
// that stepped back), and its peers refuse its changes.
func (a journalCmds) warnFutureEntries(es []*inofv1.JournalEntry) {
	var newest time.Time
	for _, e := range es {
		if t := e.GetTime().AsTime(); t.After(newest) {
			newest = t
		}
	}
	if ahead := newest.Sub(a.now()); ahead > inof.MaxGenerationSkew {
		fmt.Fprintf(a.io.Err, "warning: the newest entry is dated %s, %s ahead of this host's clock: the reflector's "+
			"generation clock is ahead (a backup from the future restored? a clock that stepped back?), and its peer "+
			"reflectors refuse its changes (docs/operations.md, \"Recovery\")\n",
			stamp(newest), ahead.Round(time.Second))
	}
}

func (a journalCmds) auditCommand() *cobra.Command {
	var req inofv1.ListJournalRequest
	var since, until string
	var conflicts bool
	cmd := &cobra.Command{Use: "audit", Short: "Who changed what, when and from where (zoning, lossless, restores)",
		Long: "Lists the journal every reflector keeps and replicates (the last history_size entries),\n" +
			"oldest first, with the conflicts it reveals: a record two edits changed on the same base,\n" +
			"of which last-writer-wins kept one. --since/--until take a time (RFC 3339) or a duration\n" +
			"back from now (24h). With --conflicts only the conflicts are listed, and the exit code is 3\n" +
			"while one is open: a lost edit on whose loss nobody has edited the object again.",
		Args: cobra.NoArgs,
		RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, _ []string) error {
			var err error
			if req.Since, err = parseWhen(since, a.now()); err != nil {
				return exitError{ExitUsage, fmt.Errorf("--since: %w", err)}
			}
			if req.Until, err = parseWhen(until, a.now()); err != nil {
				return exitError{ExitUsage, fmt.Errorf("--until: %w", err)}
			}
			if req.Since != nil && req.Until != nil && req.Until.AsTime().Before(req.Since.AsTime()) {
				return exitError{ExitUsage, fmt.Errorf("--until %s is before --since %s", until, since)}
			}
			resp, err := c.ListJournal(ctx, &req)
			if err != nil {
				return err
			}
			if conflicts {
				list, err := plainList(resp.GetConflicts())
				if err != nil {
					return err
				}
				open := 0
				if err := a.print("ConflictList", list, func(w io.Writer) {
					a.header(w, "OBJECT", "LOST", "EDITED SINCE", "IN EFFECT")
					for _, c := range resp.GetConflicts() {
						row(w, c.GetObject(), strings.Join(c.GetEntries(), ", "), strings.Join(c.GetResolved(), ", "), c.GetKept())
					}
				}); err != nil {
					return err
				}
				for _, c := range resp.GetConflicts() {
					if len(c.GetEntries()) > 0 {
						open++
					}
				}
				if n := open; n > 0 {
					return exitError{ExitConflict, fmt.Errorf("%d conflict(s): edits were lost to concurrent commits; check the objects and edit again", n)}
				}
				return nil
			}
			return a.printJournal(resp, "", false)
		})}
	f := cmd.Flags()
	f.StringVar(&req.Identity, "identity", "", "only entries of identities containing this (user:alice, token:ci)")
	f.StringVar(&req.Action, "action", "", "only this action: commit, apply, rollback, lossless, restore")
	f.StringVar(&req.Object, "object", "", "only entries that wrote this object (\"zone web\", \"alias red\")")
	f.StringVar(&since, "since", "", "only entries at or after this time (RFC 3339) or this long ago (24h)")
	f.StringVar(&until, "until", "", "only entries at or before this time or this long ago")
	f.Uint32Var(&req.Limit, "limit", 0, "only the newest N entries")
	f.BoolVar(&conflicts, "conflicts", false, "list only the conflicts; exit 3 if there are any")
	_ = cmd.RegisterFlagCompletionFunc("action", cobra.FixedCompletions(
		[]string{"commit", "apply", "rollback", "lossless", "restore"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// parseWhen reads an RFC 3339 time or a duration back from now.
func parseWhen(s string, now time.Time) (*timestamppb.Timestamp, error) {
	if s == "" {
		return nil, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return timestamppb.New(t), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return nil, fmt.Errorf("%q: want an RFC 3339 time or a duration (24h)", s)
	}
	if d < 0 {
		return nil, fmt.Errorf("%q: a duration is how long ago, without a sign (%s)", s, strings.TrimPrefix(s, "-"))
	}
	return timestamppb.New(now.Add(-d)), nil
}

func (a journalCmds) backupCommand() *cobra.Command {
	var force bool
	cmd := &cobra.Command{Use: "backup FILE", Short: "Save a consistent copy of the reflector's store (zoning, history, audit)",
		Long: "Streams an online, consistent snapshot of the store (the reflector keeps serving) into\n" +
			"FILE (\"-\": standard output). FILE is written through a new file beside it (random name,\n" +
			"mode 0600 from the start) and renamed, so it is whole or absent; an existing FILE is\n" +
			"replaced only when you say so (--force: without asking). The backup carries a SHA-256\n" +
			"of its content. Restore it on a stopped reflector with\n" +
			"`inofd restore --config FILE.yaml BACKUP`, which verifies it completely first.",
		Args: cobra.ExactArgs(1),
		RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, args []string) error {
			out, err := a.createOutput(args[0], 0o600, force)
			if err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			defer out.abort()
			stream, err := c.Backup(ctx, &inofv1.BackupRequest{})
			if err != nil {
				return err
			}
			var n int64
			for {
				ch, err := stream.Recv()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return err
				}
				k, err := out.Write(ch.GetData())
				n += int64(k)
				if err != nil {
					return fmt.Errorf("backup: %w", err)
				}
			}
			if n == 0 {
				return status.Error(codes.DataLoss, "the server sent an empty backup")
			}
			if err := out.commit(); err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			if args[0] != "-" {
				fmt.Fprintf(a.io.Out, "backup written to %s (%d bytes)\n", args[0], n)
			}
			return nil
		})}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite FILE without asking")
	return cmd
}

// completeRevisions completes retained zoning revisions.
func (a zoningCmds) completeRevisions(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 1 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.completeWith(cmd, func(ctx context.Context, c inofv1.FabricClient) ([]string, error) {
		resp, err := c.ListJournal(ctx, &inofv1.ListJournalRequest{ZoningOnly: true})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, e := range resp.GetEntries() {
			out = append(out, e.GetRevision()+"\t"+e.GetIdentity()+" "+e.GetSummary())
		}
		return out, nil
	})
}
