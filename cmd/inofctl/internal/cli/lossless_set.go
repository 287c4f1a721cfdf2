package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/lossless"
)

// printProfile prints a profile: YAML as is for the table and yaml
// formats, the same content as JSON for -o json.
func (a losslessCmds) printProfile(y string) error {
	if a.opts.Output != "json" {
		_, err := io.WriteString(a.io.Out, y)
		return err
	}
	var v any
	if err := yaml.Unmarshal([]byte(y), &v); err != nil {
		return fmt.Errorf("decode profile: %w", err)
	}
	return a.print("LosslessProfile", stringKeys(v), nil)
}

// stringKeys turns the maps YAML decodes with keys other than strings
// (a table by port speed: 100: …) into maps with their keys as text, which
// JSON can encode.
func stringKeys(v any) any {
	switch x := v.(type) {
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = stringKeys(e)
		}
		return out
	case map[string]any:
		for k, e := range x {
			x[k] = stringKeys(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = stringKeys(e)
		}
		return x
	}
	return v
}

func (a losslessCmds) losslessSetCommand() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{Use: "set FILE", Short: "Make a profile file the fabric's profile (shows the diff, asks)",
		Long: "Validates FILE, shows what changes against the fabric's profile, asks, and replaces the\n" +
			"profile on every switch and host at once. --yes skips the question. Setting the profile\n" +
			"in effect changes nothing. Every change is in `lossless history` and `inofctl audit`.",
		Args: cobra.ExactArgs(1),
		RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, args []string) error {
			y, err := readFile(args[0])
			if err != nil {
				return err
			}
			want, err := lossless.ParseYAML([]byte(y))
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if err := want.Validate(); err != nil {
				return fmt.Errorf("%s: %w (inofctl lossless validate %s lists each problem)", args[0], err, args[0])
			}
			cur, err := c.GetLosslessProfile(ctx, &inofv1.GetLosslessProfileRequest{})
			if err != nil {
				return err
			}
			wantY, err := want.YAML()
			if err != nil {
				return err
			}
			diff := lineDiff(strings.Split(strings.TrimRight(cur.GetYaml(), "\n"), "\n"), strings.Split(strings.TrimRight(string(wantY), "\n"), "\n"))
			if len(diff) == 0 {
				fmt.Fprintf(a.io.Out, "no change: the fabric's profile already is %s\n", args[0])
				return nil
			}
			fmt.Fprintf(a.io.Err, "lossless profile changes (applied to every switch and host at once):\n")
			for _, l := range diff {
				fmt.Fprintf(a.io.Err, "  %s\n", l)
			}
			if !yes {
				ok, err := confirm(a.io.In, a.io.Err, "Set this profile?")
				if err != nil {
					return err
				}
				if !ok {
					return errors.New("not set")
				}
			}
			if _, err := c.SetLosslessProfile(ctx, &inofv1.SetLosslessProfileRequest{Yaml: y}); err != nil {
				return err
			}
			fmt.Fprintf(a.io.Out, "lossless profile set from %s (%d line(s) changed)\n", args[0], len(diff))
			return nil
		})}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "set without asking")
	return cmd
}

func (a losslessCmds) losslessHistoryCommand() *cobra.Command {
	var limit uint32
	cmd := &cobra.Command{Use: "history", Short: "List the lossless profile changes: time, identity, profile",
		Args: cobra.NoArgs,
		RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, _ []string) error {
			resp, err := c.ListJournal(ctx, &inofv1.ListJournalRequest{Action: "lossless", Limit: limit})
			if err != nil {
				return err
			}
			list, err := plainList(resp.GetEntries())
			if err != nil {
				return err
			}
			return a.print("JournalEntryList", list, func(w io.Writer) {
				a.header(w, "ID", "TIME", "IDENTITY", "SUMMARY")
				for _, e := range resp.GetEntries() {
					row(w, e.GetId(), stamp(e.GetTime().AsTime()), e.GetIdentity(), e.GetSummary())
				}
			})
		})}
	cmd.Flags().Uint32Var(&limit, "limit", 0, "show only the newest N changes")
	return cmd
}

// lineDiff lists the lines removed ("- ") and added ("+ ") between two
// texts, in order (longest common subsequence; profiles are short).
func lineDiff(a, b []string) []string {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			out = append(out, "+ "+b[j])
			j++
		default:
			out = append(out, "- "+a[i])
			i++
		}
	}
	return out
}
