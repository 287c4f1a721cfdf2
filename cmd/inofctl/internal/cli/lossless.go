package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/lossless"
)

// losslessCmds are the commands of inofctl lossless (lossless_set.go,
// simulate.go too).
type losslessCmds struct{ *app }

func (a losslessCmds) losslessCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "lossless", Short: "Show, set, validate, render and check the lossless (PFC/ECN) profile"}
	var file, platform string
	var platforms []string
	validate := &cobra.Command{Use: "validate [FILE]", Short: "Validate a profile file (on this machine), or the fabric's without FILE",
		Args: cobra.MaximumNArgs(1), RunE: a.losslessValidate}
	render := &cobra.Command{Use: "render TARGET", Short: "Render the profile for a platform: " + strings.Join(lossless.Targets(), ", "),
		Long: "Renders on this machine: with -f no server is needed; without it the fabric's profile is\n" +
			"fetched from the API. --platform names the target's hardware family (inofctl lossless\n" +
			"platforms lists them); without it the profile's `platforms` entry or the target's default\n" +
			"is used. The notes of sonic (JSON has no comments) go to stderr.",
		Example: "  inofctl lossless render huawei -f lossless.yaml --platform ce6866",
		Args:    cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs), ValidArgs: lossless.Targets(),
		RunE: func(cmd *cobra.Command, args []string) error { return a.losslessRender(cmd, file, args[0], platform) }}
	render.Flags().StringVar(&platform, "platform", "", "the target's platform, e.g. spectrum-2, ce6855 (default: the profile's, else the target's first)")
	table := &cobra.Command{Use: "table", Short: "Print headroom and ECN thresholds per port speed (10–400G) × cable length (1–300 m)",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.losslessRender(cmd, file, lossless.TargetTable, "")
		}}
	check := &cobra.Command{Use: "check", Short: "Render every target and compare what each does with the profile",
		Long: "Renders the profile for every device target (on this machine; -f needs no server) and\n" +
			"compares, per target, the lossless priorities, the DSCP (or PCP) → TC map, ECN thresholds in\n" +
			"bytes, ETS shares, where CNPs go, watchdog detection/restoration and headroom. Each cell is\n" +
			"= as the profile says, ≈ rounded to the target's unit, ~ computed by the target itself,\n" +
			"? in a unit no reference confirms, - not a setting of the target, ≠ different; the notes\n" +
			"say why. Exits 1 when any target differs.",
		Example: "  inofctl lossless check -f lossless.yaml --platform huawei=ce6866 --platform sonic=broadcom",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return a.losslessCheck(cmd, file, platforms) }}
	check.Flags().StringArrayVar(&platforms, "platform", nil, "a target's platform as TARGET=NAME (repeatable)")
	for _, c := range []*cobra.Command{render, table, check} {
		c.Flags().StringVarP(&file, "file", "f", "", "use this profile file (no server needed) instead of the fabric's")
	}
	cmd.AddCommand(
		&cobra.Command{Use: "show", Short: "Print the fabric's profile (YAML; -o json for JSON)", Args: cobra.NoArgs,
			RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, _ []string) error {
				p, err := c.GetLosslessProfile(ctx, &inofv1.GetLosslessProfileRequest{})
				if err != nil {
					return err
				}
				return a.printProfile(p.GetYaml())
			})},
		a.losslessSetCommand(), a.losslessHistoryCommand(),
		validate, render, table, check, a.losslessPlatformsCommand(), a.losslessSimulateCommand(),
	)
	return group(cmd)
}

// losslessProfile reads the profile from file, or fetches the fabric's.
func (a losslessCmds) losslessProfile(ctx context.Context, file string) (lossless.Profile, error) {
	if file != "" {
		y, err := readFile(file)
		if err != nil {
			return lossless.Profile{}, err
		}
		p, err := lossless.ParseYAML([]byte(y))
		if err != nil {
			return lossless.Profile{}, fmt.Errorf("%s: %w", file, err)
		}
		return p, nil
	}
	c, err := a.client()
	if err != nil {
		return lossless.Profile{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	resp, err := c.GetLosslessProfile(ctx, &inofv1.GetLosslessProfileRequest{})
	if err != nil {
		return lossless.Profile{}, err
	}
	p, err := lossless.ParseYAML([]byte(resp.GetYaml()))
	if err != nil {
		return lossless.Profile{}, fmt.Errorf("the fabric's profile: %w", err)
	}
	return p, nil
}

// losslessRender renders on this machine.
func (a losslessCmds) losslessRender(cmd *cobra.Command, file, target, platform string) error {
	p, err := a.losslessProfile(cmd.Context(), file)
	if err != nil {
		return runError{err}
	}
	if target == lossless.TargetTable {
		text, err := lossless.Render(p, target)
		if err != nil {
			return runError{err}
		}
		_, err = a.io.Out.Write(text)
		return err
	}
	r, err := lossless.RenderDevice(p, target, lossless.RenderOptions{Platform: platform})
	if err != nil {
		return runError{err}
	}
	if _, err := a.io.Out.Write(r.Text); err != nil {
		return runError{err}
	}
	if !r.NotesInText() {
		for _, n := range r.Notes {
			fmt.Fprintf(a.io.Err, "# note (%s): %s\n", r.Platform, n)
		}
	}
	return nil
}

// losslessCheck prints the cross-target comparison; a difference fails.
func (a losslessCmds) losslessCheck(cmd *cobra.Command, file string, platformFlags []string) error {
	o := lossless.CheckOptions{Platforms: map[string]string{}}
	for _, f := range platformFlags {
		target, name, ok := strings.Cut(f, "=")
		if !ok || target == "" || name == "" {
			return fmt.Errorf("--platform %q: want TARGET=NAME, e.g. huawei=ce6866", f)
		}
		o.Platforms[target] = name
	}
	p, err := a.losslessProfile(cmd.Context(), file)
	if err != nil {
		return runError{err}
	}
	rep, err := lossless.Check(p, o)
	if err != nil {
		return runError{err}
	}
	if err := a.print("LosslessCheck", checkReport(rep), func(w io.Writer) { io.WriteString(w, rep.Table()) }); err != nil {
		return runError{err}
	}
	if rep.Differs() {
		return runError{errors.New("lossless check: a target does something else than the profile (≠ above)")}
	}
	return nil
}

// checkReport is the check as plain data for -o json|yaml.
func checkReport(rep lossless.CheckReport) map[string]any {
	var targets []string
	notes := map[string][]string{}
	for _, t := range rep.Targets {
		targets = append(targets, t.Platform.String())
		notes[t.Platform.String()] = t.Notes
	}
	var rows []map[string]any
	for _, r := range rep.Rows {
		cells := map[string]any{}
		for i, c := range r.Cells {
			cells[targets[i]] = map[string]string{"status": string(c.Status), "value": c.Value}
		}
		rows = append(rows, map[string]any{"aspect": r.Aspect, "profile": r.Profile, "targets": cells})
	}
	return map[string]any{"profile": rep.Profile, "differs": rep.Differs(), "rows": rows, "notes": notes}
}

// losslessPlatformsCommand lists the platform table.
func (a losslessCmds) losslessPlatformsCommand() *cobra.Command {
	return &cobra.Command{Use: "platforms [TARGET]", Short: "List the hardware families each render target knows (no server needed)",
		Args: cobra.MatchAll(cobra.MaximumNArgs(1), cobra.OnlyValidArgs), ValidArgs: lossless.PlatformTargets(),
		RunE: func(_ *cobra.Command, args []string) error {
			targets := lossless.PlatformTargets()
			if len(args) == 1 {
				targets = args
			}
			var list []map[string]any
			for _, t := range targets {
				for i, pl := range lossless.Platforms(t) {
					list = append(list, map[string]any{"target": t, "name": pl.Name, "default": i == 0, "models": pl.Models,
						"cell_bytes": pl.CellBytes, "buffer_bytes": pl.TotalBufferBytes, "unconfirmed": pl.Unconfirmed})
				}
			}
			err := a.print("PlatformList", anyList(list), func(w io.Writer) {
				a.header(w, "TARGET", "PLATFORM", "CELL", "BUFFER", "MODELS")
				for _, pl := range list {
					name := pl["name"].(string)
					if pl["default"].(bool) {
						name += " (default)"
					}
					cell, buf := fmt.Sprint(pl["cell_bytes"]), fmt.Sprint(pl["buffer_bytes"])
					if cell == "0" {
						cell = "profile's"
					}
					if buf == "0" {
						buf = "unknown"
					}
					row(w, pl["target"], name, cell, buf, pl["models"])
				}
			})
			if err != nil {
				return runError{err}
			}
			return nil
		}}
}

// losslessValidate prints the problems of a profile; any problem fails. A
// file is validated on this machine; without one the fabric's profile is
// validated by the API.
func (a losslessCmds) losslessValidate(cmd *cobra.Command, args []string) error {
	var problems []*inofv1.Problem
	if len(args) == 1 {
		p, err := a.losslessProfile(cmd.Context(), args[0])
		if err != nil {
			return runError{err}
		}
		var ps lossless.Problems
		if err := p.Validate(); errors.As(err, &ps) {
			for _, x := range ps {
				problems = append(problems, &inofv1.Problem{Field: x.Field, Value: x.Value, Rule: x.Rule, Detail: x.Detail, Fix: x.Fix})
			}
		} else if err != nil {
			return runError{err}
		}
	} else {
		err := a.run(func(ctx context.Context, c inofv1.FabricClient, _ []string) error {
			resp, err := c.ValidateLosslessProfile(ctx, &inofv1.ValidateLosslessProfileRequest{})
			problems = resp.GetProblems()
			return err
		})(cmd, args)
		if err != nil {
			return err
		}
	}
	list, err := plainList(problems)
	if err != nil {
		return runError{err}
	}
	err = a.print("ProblemList", list, func(w io.Writer) {
		if len(problems) == 0 {
			fmt.Fprintln(w, "valid")
			return
		}
		a.header(w, "FIELD", "VALUE", "RULE", "PROBLEM", "FIX")
		for _, p := range problems {
			row(w, p.GetField(), p.GetValue(), p.GetRule(), p.GetDetail(), p.GetFix())
		}
	})
	if err == nil && len(problems) > 0 {
		err = fmt.Errorf("lossless profile: %d problem(s)", len(problems))
	}
	if err != nil {
		return runError{err}
	}
	return nil
}

// readFile returns a file's content ("" for no path); an empty file is an
// error (it would otherwise stand for the fabric's profile).
func readFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read profile: %w", err)
	}
	if strings.TrimSpace(string(b)) == "" {
		return "", fmt.Errorf("profile file %s is empty", path)
	}
	return string(b), nil
}
