package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	inofv1 "github.com/openinof/inof/inof/api/v1"
	"github.com/openinof/inof/lossless"
)

func (a *app) losslessCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "lossless", Short: "Show, set, validate and render the lossless (PFC/ECN) profile"}
	var file string
	validate := &cobra.Command{Use: "validate [FILE]", Short: "Validate a profile file (the fabric's without FILE)", Args: cobra.MaximumNArgs(1),
		RunE: a.run(a.losslessValidate)}
	renderTo := func(ctx context.Context, c inofv1.FabricClient, target string) error {
		y, err := readFile(file)
		if err != nil {
			return err
		}
		resp, err := c.RenderLosslessProfile(ctx, &inofv1.RenderLosslessProfileRequest{Yaml: y, Target: target})
		if err != nil {
			return err
		}
		return a.print(map[string]any{"target": target, "text": resp.GetText()}, func(w io.Writer) {
			io.WriteString(w, resp.GetText())
		})
	}
	render := &cobra.Command{Use: "render TARGET", Short: "Render the profile for a platform: " + strings.Join(lossless.Targets(), ", "),
		Args: cobra.ExactArgs(1), ValidArgs: lossless.Targets(),
		RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, args []string) error {
			return renderTo(ctx, c, args[0])
		})}
	table := &cobra.Command{Use: "table", Short: "Print headroom and ECN thresholds per port speed (10–400G) × cable length (1–300 m)",
		Args: cobra.NoArgs,
		RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, _ []string) error {
			return renderTo(ctx, c, lossless.TargetTable)
		})}
	for _, c := range []*cobra.Command{render, table} {
		c.Flags().StringVarP(&file, "file", "f", "", "use this profile file instead of the fabric's")
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
		validate, render, table, a.losslessSimulateCommand(),
	)
	return group(cmd)
}

// losslessValidate prints the problems of a profile; any problem fails.
func (a *app) losslessValidate(ctx context.Context, c inofv1.FabricClient, args []string) error {
	var y string
	if len(args) == 1 {
		var err error
		if y, err = readFile(args[0]); err != nil {
			return err
		}
	}
	resp, err := c.ValidateLosslessProfile(ctx, &inofv1.ValidateLosslessProfileRequest{Yaml: y})
	if err != nil {
		return err
	}
	list, err := plainList(resp.GetProblems())
	if err != nil {
		return err
	}
	err = a.print(map[string]any{"problems": list}, func(w io.Writer) {
		if len(resp.GetProblems()) == 0 {
			fmt.Fprintln(w, "valid")
			return
		}
		row(w, "FIELD", "VALUE", "RULE", "PROBLEM", "FIX")
		for _, p := range resp.GetProblems() {
			row(w, p.GetField(), p.GetValue(), p.GetRule(), p.GetDetail(), p.GetFix())
		}
	})
	if err == nil && len(resp.GetProblems()) > 0 {
		err = fmt.Errorf("lossless profile: %d problem(s)", len(resp.GetProblems()))
	}
	return err
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
