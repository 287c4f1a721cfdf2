package cli

import (
	"context"

	"github.com/spf13/cobra"

	inofv1 "github.com/openinof/inof/inof/api/v1"
)

const membersHelp = `Members: an address (10.0.0.5), a range (10.0.0.10-10.0.0.20), a prefix (10.0.1.0/24),
an NQN (nqn.2014-08.org.example:array1) or an alias (alias:rack1).`

func (a *app) zoneCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "zone",
		Short: "Create, change, list and show zones",
		Long:  "A zone is a named list of members; hosts and targets that share a zone see each other.\n" + membersHelp,
	}
	var f changeFlags
	edit := func(use, short string, args cobra.PositionalArgs, build func([]string) *inofv1.Edit) *cobra.Command {
		c := &cobra.Command{Use: use, Short: short, Args: args,
			RunE: a.change(&f, func(args []string) ([]*inofv1.Edit, error) { return []*inofv1.Edit{build(args)}, nil })}
		f.register(c)
		return c
	}
	create := edit("create NAME [MEMBER...]", "Create a zone (like FC zonecreate)", cobra.MinimumNArgs(1), func(args []string) *inofv1.Edit {
		return &inofv1.Edit{Edit: &inofv1.Edit_CreateZone{CreateZone: &inofv1.CreateZone{Name: args[0], Members: args[1:]}}}
	})
	existing := []*cobra.Command{
		edit("delete NAME", "Delete a zone", cobra.ExactArgs(1), func(args []string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_DeleteZone{DeleteZone: &inofv1.DeleteZone{Name: args[0]}}}
		}),
		edit("rename NAME NEW-NAME", "Rename a zone", cobra.ExactArgs(2), func(args []string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_RenameZone{RenameZone: &inofv1.RenameZone{Name: args[0], NewName: args[1]}}}
		}),
		edit("add NAME MEMBER...", "Add members to a zone (like FC zoneadd)", cobra.MinimumNArgs(2), func(args []string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_AddZoneMembers{AddZoneMembers: &inofv1.ZoneMembers{Zone: args[0], Members: args[1:]}}}
		}),
		edit("remove NAME MEMBER...", "Remove members from a zone (like FC zoneremove)", cobra.MinimumNArgs(2), func(args []string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_RemoveZoneMembers{RemoveZoneMembers: &inofv1.ZoneMembers{Zone: args[0], Members: args[1:]}}}
		}),
		{Use: "show NAME", Short: "Show one zone", Args: cobra.ExactArgs(1), RunE: a.run(a.zoneShow)},
	}
	for _, c := range existing {
		c.ValidArgsFunction = a.completeZones
	}
	cmd.AddCommand(create, &cobra.Command{Use: "list", Short: "List the zones", Args: cobra.NoArgs, RunE: a.run(a.zoneList)})
	cmd.AddCommand(existing...)
	return group(cmd)
}

func (a *app) zoneList(ctx context.Context, c inofv1.FabricClient, _ []string) error {
	z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
	if err != nil {
		return err
	}
	return listNamed(a, z.GetRevision(), "zones", "ZONE", z.GetZones())
}

func (a *app) zoneShow(ctx context.Context, c inofv1.FabricClient, args []string) error {
	z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
	if err != nil {
		return err
	}
	return showNamed(a, "zone", z.GetZones(), args[0])
}

// completeZones completes the first argument with the zone names.
func (a *app) completeZones(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveDefault
	}
	if err := a.load(cmd); err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	c, err := a.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), a.opts.Timeout)
	defer cancel()
	z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	names := make([]string, 0, len(z.GetZones()))
	for _, x := range z.GetZones() {
		names = append(names, x.GetName())
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
