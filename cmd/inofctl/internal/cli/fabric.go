package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	inofv1 "github.com/openinof/inof/inof/api/v1"
)

func (a *app) fabricCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "fabric", Short: "Show and set the fabric-wide zoning settings"}
	set := group(&cobra.Command{Use: "set", Short: "Set a fabric-wide zoning setting"})
	var f changeFlags
	setting := func(use, short string, build func(bool) *inofv1.SetSettings) *cobra.Command {
		c := &cobra.Command{Use: use + " on|off", Short: short, Args: cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs), ValidArgs: []string{"on", "off"},
			RunE: a.change(&f, func(args []string) ([]*inofv1.Edit, error) {
				v, err := parseOnOff(args[0])
				if err != nil {
					return nil, err
				}
				return []*inofv1.Edit{{Edit: &inofv1.Edit_SetSettings{SetSettings: build(v)}}}, nil
			})}
		f.register(c)
		return c
	}
	set.AddCommand(
		setting("default-zone", "Enable or disable the default zone (unzoned devices see each other)",
			func(v bool) *inofv1.SetSettings { return &inofv1.SetSettings{DefaultZoneEnabled: &v} }),
		setting("hard-zoning", "Turn hard zoning on or off (unzoned and zoned devices never see each other)",
			func(v bool) *inofv1.SetSettings { return &inofv1.SetSettings{HardZoning: &v} }),
	)
	cmd.AddCommand(set, &cobra.Command{Use: "show", Short: "Show the fabric-wide zoning settings", Args: cobra.NoArgs, RunE: a.run(a.fabricShow)})
	return group(cmd)
}

func (a *app) fabricShow(ctx context.Context, c inofv1.FabricClient, _ []string) error {
	z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
	if err != nil {
		return err
	}
	v, err := plain(z.GetSettings())
	if err != nil {
		return err
	}
	if m, ok := v.(map[string]any); ok {
		m["revision"] = z.GetRevision()
	}
	return a.print(v, func(w io.Writer) {
		fmt.Fprintf(w, "default-zone\t%s\n", onOff(z.GetSettings().GetDefaultZoneEnabled()))
		fmt.Fprintf(w, "hard-zoning\t%s\n", onOff(z.GetSettings().GetHardZoning()))
		fmt.Fprintf(w, "revision\t%s\n", z.GetRevision())
	})
}
