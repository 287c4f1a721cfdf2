package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	inofv1 "github.com/openinof/inof/inof/api/v1"
)

func (a *app) aliasCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alias",
		Short: "Create, change, list and show aliases",
		Long: "An alias names a list of members to use in zones as alias:NAME; aliases do not nest.\n" +
			strings.Replace(membersHelp, " or an alias (alias:rack1)", "", 1),
	}
	var f changeFlags
	edit := func(use, short string, args cobra.PositionalArgs, build func([]string) *inofv1.Edit) *cobra.Command {
		c := &cobra.Command{Use: use, Short: short, Args: args,
			RunE: a.change(&f, func(args []string) ([]*inofv1.Edit, error) { return []*inofv1.Edit{build(args)}, nil })}
		f.register(c)
		return c
	}
	cmd.AddCommand(
		edit("create NAME [MEMBER...]", "Create an alias (like FC alicreate)", cobra.MinimumNArgs(1), func(args []string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_CreateAlias{CreateAlias: &inofv1.CreateAlias{Name: args[0], Members: args[1:]}}}
		}),
		edit("delete NAME", "Delete an alias (zones must not use it)", cobra.ExactArgs(1), func(args []string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_DeleteAlias{DeleteAlias: &inofv1.DeleteAlias{Name: args[0]}}}
		}),
		edit("add NAME MEMBER...", "Add members to an alias", cobra.MinimumNArgs(2), func(args []string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_AddAliasMembers{AddAliasMembers: &inofv1.AliasMembers{Alias: args[0], Members: args[1:]}}}
		}),
		edit("remove NAME MEMBER...", "Remove members from an alias", cobra.MinimumNArgs(2), func(args []string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_RemoveAliasMembers{RemoveAliasMembers: &inofv1.AliasMembers{Alias: args[0], Members: args[1:]}}}
		}),
		&cobra.Command{Use: "list", Short: "List the aliases", Args: cobra.NoArgs, RunE: a.run(a.aliasList)},
		&cobra.Command{Use: "show NAME", Short: "Show one alias", Args: cobra.ExactArgs(1), RunE: a.run(a.aliasShow)},
	)
	return group(cmd)
}

func (a *app) aliasList(ctx context.Context, c inofv1.FabricClient, _ []string) error {
	z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
	if err != nil {
		return err
	}
	return listNamed(a, z.GetRevision(), "aliases", "ALIAS", z.GetAliases())
}

func (a *app) aliasShow(ctx context.Context, c inofv1.FabricClient, args []string) error {
	z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
	if err != nil {
		return err
	}
	return showNamed(a, "alias", z.GetAliases(), args[0])
}
