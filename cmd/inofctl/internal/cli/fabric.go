package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// fabricCmds are the commands of inofctl fabric.
type fabricCmds struct{ editor }

func (a fabricCmds) fabricCommand() *cobra.Command {
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
		&cobra.Command{Use: "record-format per-device|sets", Short: "Switch how switches publish their devices (one record per device, or device sets)",
			Long: "Device sets carry many devices of a switch in one BGP record (docs/records.md). A reflector\n" +
				"refuses \"sets\" while a configured switch has not announced that it reads them, and names\n" +
				"those switches; \"per-device\" is always accepted. Every switch republishes its devices in\n" +
				"the new format without a change any host can see.",
			Args: cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs), ValidArgs: []string{"per-device", "sets"},
			RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, args []string) error {
				f, err := c.SetRecordFormat(ctx, &inofv1.SetRecordFormatRequest{Format: args[0]})
				if err != nil {
					return err
				}
				fmt.Fprintf(a.io.Out, "record format set to %s\n", f.GetFormat())
				return nil
			})},
		setting("default-zone", "Enable or disable the default zone (unzoned devices see each other)",
			func(v bool) *inofv1.SetSettings { return &inofv1.SetSettings{DefaultZoneEnabled: &v} }),
		setting("hard-zoning", "Turn hard zoning on or off (unzoned and zoned devices never see each other)",
			func(v bool) *inofv1.SetSettings { return &inofv1.SetSettings{HardZoning: &v} }),
	)
	cmd.AddCommand(set, &cobra.Command{Use: "show", Short: "Show the fabric-wide zoning settings", Args: cobra.NoArgs, RunE: a.run(a.fabricShow)})
	return group(cmd)
}

func (a fabricCmds) fabricShow(ctx context.Context, c inofv1.FabricClient, _ []string) error {
	z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
	if err != nil {
		return err
	}
	v, err := plain(z.GetSettings())
	if err != nil {
		return err
	}
	rf, err := c.GetRecordFormat(ctx, &inofv1.GetRecordFormatRequest{})
	if status.Code(err) == codes.Unimplemented {
		rf, err = nil, nil // a switch's API: the reflectors hold it
	}
	if err != nil {
		return err
	}
	if m, ok := v.(map[string]any); ok {
		if rf != nil {
			if m["record_format"], err = plain(rf); err != nil {
				return err
			}
		}
	}
	return a.printRev("Fabric", z.GetRevision(), v, func(w io.Writer) {
		fmt.Fprintf(w, "default-zone\t%s\n", onOff(z.GetSettings().GetDefaultZoneEnabled()))
		fmt.Fprintf(w, "hard-zoning\t%s\n", onOff(z.GetSettings().GetHardZoning()))
		fmt.Fprintf(w, "revision\t%s\n", z.GetRevision())
		if rf == nil {
			return
		}
		fmt.Fprintf(w, "record-format\t%s\n", rf.GetFormat())
		var behind []string
		for _, sw := range rf.GetSwitches() {
			if !sw.GetReadsSets() {
				behind = append(behind, sw.GetSwitch())
			}
		}
		fmt.Fprintf(w, "switches reading sets\t%d of %d\n", len(rf.GetSwitches())-len(behind), len(rf.GetSwitches()))
		if len(behind) > 0 {
			fmt.Fprintf(w, "switches behind\t%s\n", strings.Join(behind, ", "))
		}
	})
}
