package cli

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/spf13/cobra"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

const pinHelp = `A pin binds an NQN to the switch ports where a device may claim it: a device that
registers with a pinned NQN on any other port is refused (in no zone, told to no host),
counted, logged and reported as an event of kind pin. A device declares its NQN itself
and nothing in LLDP tells two devices on two ports apart, so zoning by NQN trusts the NQN
a target declares unless it is pinned (docs/security.md). A port is SWITCH:PORT, the
switch's router-id and its access port (10.0.0.11:Ethernet4); a dual-ported array is
pinned to both of its ports. An NQN without a pin behaves as before; inofctl device show
says when an NQN is claimed on more than one port.`

// pinCmds are the commands of inofctl pin.
type pinCmds struct{ editor }

func (a pinCmds) pinCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "pin", Short: "Pin NQNs to the switch ports where devices may claim them", Long: pinHelp}
	var f changeFlags
	var at []string
	set := &cobra.Command{Use: "set NQN --at SWITCH:PORT [--at SWITCH:PORT...]",
		Short: "Pin an NQN to switch ports (replacing its pin)", Args: cobra.ExactArgs(1),
		RunE: a.change(&f, func(args []string) ([]*inofv1.Edit, error) {
			if len(at) == 0 {
				return nil, errors.New("no port: give --at SWITCH:PORT (the switch's router-id, its access port) once or more")
			}
			return []*inofv1.Edit{{Edit: &inofv1.Edit_SetPin{SetPin: &inofv1.Pin{Nqn: args[0], At: at}}}}, nil
		})}
	set.Flags().StringArrayVar(&at, "at", nil, "a switch port where devices may claim the NQN: SWITCH:PORT (repeatable)")
	f.register(set)
	remove := &cobra.Command{Use: "remove NQN", Short: "Remove an NQN's pin (any port may claim it again)", Args: cobra.ExactArgs(1),
		ValidArgsFunction: a.completePins,
		RunE: a.change(&f, func(args []string) ([]*inofv1.Edit, error) {
			return []*inofv1.Edit{{Edit: &inofv1.Edit_RemovePin{RemovePin: &inofv1.RemovePin{Nqn: args[0]}}}}, nil
		})}
	f.register(remove)
	list := a.listVerb(&cobra.Command{Use: "list", Short: "List the pins", Args: cobra.NoArgs}, []string{"zoning"}, a.pinList)
	cmd.AddCommand(set, remove, list)
	return group(cmd)
}

func (a pinCmds) pinList(ctx context.Context, c inofv1.FabricClient, _ []string) error {
	z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
	if err != nil {
		return err
	}
	list, err := plainList(z.GetPins())
	if err != nil {
		return err
	}
	return a.printRev("PinList", z.GetRevision(), list, func(w io.Writer) {
		a.header(w, "NQN", "PORTS")
		for _, p := range z.GetPins() {
			row(w, p.GetNqn(), strings.Join(p.GetAt(), ", "))
		}
	})
}

// completePins completes the pinned NQNs.
func (a pinCmds) completePins(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.completeWith(cmd, func(ctx context.Context, c inofv1.FabricClient) ([]string, error) {
		z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, p := range z.GetPins() {
			out = append(out, p.GetNqn())
		}
		return out, nil
	})
}
