package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

const membersHelp = `Members: an address (10.0.0.5), a range (10.0.0.10-10.0.0.20), a prefix (10.0.1.0/24),
an NQN (nqn.2014-08.org.example:array1) or an alias (alias:rack1).`

// zoneCmds are the commands of inofctl zone.
type zoneCmds struct{ editor }

func (a zoneCmds) zoneCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "zone",
		Short: "Create, change, list and show zones",
		Long:  "A zone is a named list of members; hosts and targets that share a zone see each other.\n" + membersHelp,
	}
	var f changeFlags
	edit := func(use, short string, args cobra.PositionalArgs, build func([]string) *inofv1.Edit) *cobra.Command {
		return a.editCommand(&f, use, short, args, build)
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
		edit("add NAME MEMBER...", "Add members to a zone (like FC zoneadd)", cobra.MinimumNArgs(1), func(args []string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_AddZoneMembers{AddZoneMembers: &inofv1.ZoneMembers{Zone: args[0], Members: args[1:]}}}
		}),
		edit("remove NAME MEMBER...", "Remove members from a zone (like FC zoneremove)", cobra.MinimumNArgs(1), func(args []string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_RemoveZoneMembers{RemoveZoneMembers: &inofv1.ZoneMembers{Zone: args[0], Members: args[1:]}}}
		}),
		{Use: "show NAME", Short: "Show one zone", Args: cobra.ExactArgs(1), RunE: a.run(a.zoneShow)},
	}
	for _, c := range existing {
		c.ValidArgsFunction = a.completeZones
	}
	create.ValidArgsFunction = func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return a.completeMembers(cmd, args, "")
	}
	where := &cobra.Command{Use: "where MEMBER", Short: "List the zones (and aliases) that hold a member, an alias or a device address",
		Long: "MEMBER as written in zones (10.0.0.5, a range, a prefix, an NQN, alias:NAME). An address\n" +
			"also finds the ranges and prefixes that cover it, and members that come through an alias.",
		Args: cobra.ExactArgs(1), ValidArgsFunction: a.completeMembers, RunE: a.run(a.zoneWhere)}
	cmd.AddCommand(create, a.listVerb(&cobra.Command{Use: "list", Short: "List the zones (long member lists cut; -o wide or zone show has them all)", Args: cobra.NoArgs},
		[]string{"zoning"}, a.zoneList), where)
	cmd.AddCommand(existing...)
	return group(cmd)
}

func (a zoneCmds) zoneList(ctx context.Context, c inofv1.FabricClient, _ []string) error {
	z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
	if err != nil {
		return err
	}
	return listNamed(a.app, z.GetRevision(), "Zone", "ZONE", z.GetZones())
}

func (a zoneCmds) zoneWhere(ctx context.Context, c inofv1.FabricClient, args []string) error {
	resp, err := c.FindMember(ctx, &inofv1.FindMemberRequest{Member: args[0]})
	if err != nil {
		return err
	}
	list, err := plainList(resp.GetUses())
	if err != nil {
		return err
	}
	return a.print("MemberUseList", list, func(w io.Writer) {
		if len(resp.GetUses()) == 0 {
			fmt.Fprintf(w, "%s is in no zone and no alias\n", args[0])
			return
		}
		a.header(w, "ZONE", "ALIAS", "MEMBER")
		for _, u := range resp.GetUses() {
			row(w, u.GetZone(), u.GetAlias(), u.GetMember())
		}
	})
}

func (a zoneCmds) zoneShow(ctx context.Context, c inofv1.FabricClient, args []string) error {
	z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
	if err != nil {
		return err
	}
	return showNamed(a.app, "zone", "Zone", z.GetRevision(), z.GetZones(), args[0])
}

// completeZones completes the first argument with the zone names, the
// others with members (completeMembers).
func (a zoneCmds) completeZones(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	return completeNamesOf(a.app, cmd, args, (*inofv1.Zoning).GetZones)
}

// completeAliases completes the first argument with the alias names, the
// others with members.
func (a aliasCmds) completeAliases(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	return completeNamesOf(a.app, cmd, args, (*inofv1.Zoning).GetAliases)
}

// completeNamesOf completes the first argument with the names of what list
// returns, the others with members.
func completeNamesOf[T namedMembers](a *app, cmd *cobra.Command, args []string, list func(*inofv1.Zoning) []T) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return a.completeMembers(cmd, args, "")
	}
	return a.completeWith(cmd, func(ctx context.Context, c inofv1.FabricClient) ([]string, error) {
		z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
		if err != nil {
			return nil, err
		}
		var names []string
		for _, x := range list(z) {
			names = append(names, x.GetName())
		}
		return names, nil
	})
}

// completeMembers completes members: alias:NAME for every alias, the
// registered devices' addresses and NQNs.
func (a *app) completeMembers(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	return a.completeWith(cmd, func(ctx context.Context, c inofv1.FabricClient) ([]string, error) {
		z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, x := range z.GetAliases() {
			out = append(out, "alias:"+x.GetName())
		}
		ds, err := c.ListDevices(ctx, &inofv1.ListDevicesRequest{})
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for _, d := range ds.GetDevices() {
			for _, m := range []string{d.GetAddress(), d.GetNqn()} {
				if m != "" && !seen[m] {
					seen[m] = true
					out = append(out, m+"\t"+roleName(d.GetRole()))
				}
			}
		}
		return out, nil
	})
}

// completeWith runs a completion query against the API.
func (a *app) completeWith(cmd *cobra.Command, list func(context.Context, inofv1.FabricClient) ([]string, error)) ([]string, cobra.ShellCompDirective) {
	if err := a.load(cmd); err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	c, err := a.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), a.opts.Timeout)
	defer cancel()
	out, err := list(ctx, c)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
