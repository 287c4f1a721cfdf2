package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// aliasCmds are the commands of inofctl alias.
type aliasCmds struct{ editor }

func (a aliasCmds) aliasCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alias",
		Short: "Create, change, list and show aliases",
		Long: "An alias names a list of members to use in zones as alias:NAME; aliases do not nest.\n" +
			strings.Replace(membersHelp, " or an alias (alias:rack1)", "", 1),
	}
	var f changeFlags
	edit := func(use, short string, args cobra.PositionalArgs, build func([]string) *inofv1.Edit) *cobra.Command {
		return a.editCommand(&f, use, short, args, build)
	}
	cmd.AddCommand(
		completing(a, edit("create NAME [MEMBER...]", "Create an alias (like FC alicreate)", cobra.MinimumNArgs(1), func(args []string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_CreateAlias{CreateAlias: &inofv1.CreateAlias{Name: args[0], Members: args[1:]}}}
		}), true),
		completing(a, edit("delete NAME", "Delete an alias (zones must not use it)", cobra.ExactArgs(1), func(args []string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_DeleteAlias{DeleteAlias: &inofv1.DeleteAlias{Name: args[0]}}}
		}), false),
		completing(a, edit("add NAME MEMBER...", "Add members to an alias", cobra.MinimumNArgs(1), func(args []string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_AddAliasMembers{AddAliasMembers: &inofv1.AliasMembers{Alias: args[0], Members: args[1:]}}}
		}), false),
		completing(a, edit("remove NAME MEMBER...", "Remove members from an alias", cobra.MinimumNArgs(1), func(args []string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_RemoveAliasMembers{RemoveAliasMembers: &inofv1.AliasMembers{Alias: args[0], Members: args[1:]}}}
		}), false),
		a.listVerb(&cobra.Command{Use: "list", Short: "List the aliases (long member lists cut; -o wide or alias show has them all)", Args: cobra.NoArgs},
			[]string{"zoning"}, a.aliasList),
		completing(a, &cobra.Command{Use: "show NAME", Short: "Show one alias", Args: cobra.ExactArgs(1), RunE: a.run(a.aliasShow)}, false),
		&cobra.Command{Use: "users NAME", Short: "List the zones that use an alias", Args: cobra.ExactArgs(1),
			ValidArgsFunction: a.completeAliases,
			RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, args []string) error {
				return zoneCmds{a.editor}.zoneWhere(ctx, c, []string{"alias:" + args[0]})
			})},
	)
	return group(cmd)
}

// completing sets an alias command's completion: for a new alias only
// members, otherwise the alias names first.
func completing(a aliasCmds, c *cobra.Command, create bool) *cobra.Command {
	c.ValidArgsFunction = a.completeAliases
	if create {
		c.ValidArgsFunction = func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return a.completeMembers(cmd, args, "")
		}
	}
	return c
}

func (a aliasCmds) aliasList(ctx context.Context, c inofv1.FabricClient, _ []string) error {
	z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
	if err != nil {
		return err
	}
	return listNamed(a.app, z.GetRevision(), "Alias", "ALIAS", z.GetAliases())
}

func (a aliasCmds) aliasShow(ctx context.Context, c inofv1.FabricClient, args []string) error {
	z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
	if err != nil {
		return err
	}
	return showNamed(a.app, "alias", "Alias", z.GetRevision(), z.GetAliases(), args[0])
}
