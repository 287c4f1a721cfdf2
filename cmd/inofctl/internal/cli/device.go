package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

func (a *app) deviceCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "device", Short: "List devices and explain who sees whom"}
	var req inofv1.ListDevicesRequest
	var role string
	list := &cobra.Command{Use: "list", Short: "List the registered devices", Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			r, ok := map[string]inofv1.Role{"": inofv1.Role_ROLE_UNSPECIFIED, "host": inofv1.Role_ROLE_HOST,
				"target": inofv1.Role_ROLE_TARGET, "both": inofv1.Role_ROLE_BOTH}[role]
			if !ok {
				return fmt.Errorf("--role %q: want host, target or both", role)
			}
			req.Role = r
			return nil
		},
		RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, _ []string) error { return a.deviceList(ctx, c, &req) })}
	fl := list.Flags()
	fl.StringVar(&req.Zone, "zone", "", "only devices in this zone (\"default\": in no custom zone)")
	fl.StringVar(&req.Switch, "switch", "", "only devices reported by this switch (router-id)")
	fl.StringVar(&role, "role", "", "only hosts, targets or both (a device of role both counts as either)")
	fl.StringVar(&req.Status, "status", "", "only active or inactive devices")
	fl.StringVar(&req.Address, "address", "", "only this address or the addresses in this prefix")
	var visibleOnly bool
	why := &cobra.Command{Use: "why HOST [TARGET]", Short: "Explain whether a host sees a target (or each target), and why",
		Long: "Explains by the zoning rule whether HOST sees TARGET: \"same zone red\", \"default zone\",\n" +
			"\"hard zoning blocks\", \"no shared zone\", a role that does not fit. Without TARGET, every\n" +
			"registered target is listed.",
		Args: cobra.RangeArgs(1, 2),
		RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, args []string) error {
			if len(args) == 2 {
				return a.deviceWhy(ctx, c, args)
			}
			return a.deviceVisibility(ctx, c, args[0], visibleOnly)
		})}
	why.Flags().BoolVar(&visibleOnly, "visible-only", false, "without TARGET: list only the targets the host sees")
	var seesOnly bool
	whoSees := &cobra.Command{Use: "who-sees TARGET", Short: "List the registered hosts that see a target (each with why)",
		Args: cobra.ExactArgs(1),
		RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, args []string) error {
			resp, err := c.WhoSees(ctx, &inofv1.WhoSeesRequest{Target: args[0], VisibleOnly: seesOnly})
			if err != nil {
				return err
			}
			return a.printVisibility(resp, "HOST", (*inofv1.WhyResponse).GetHost)
		})}
	whoSees.Flags().BoolVar(&seesOnly, "visible-only", false, "list only the hosts that see the target")
	cmd.AddCommand(list, why, whoSees)
	return group(cmd)
}

func (a *app) deviceList(ctx context.Context, c inofv1.FabricClient, req *inofv1.ListDevicesRequest) error {
	resp, err := c.ListDevices(ctx, req)
	if err != nil {
		return err
	}
	list, err := plainList(resp.GetDevices())
	if err != nil {
		return err
	}
	return a.print(list, func(w io.Writer) {
		row(w, "ADDRESS", "ROLE", "PROTOCOL", "PORT", "NQN", "SWITCH", "STATUS", "ZONES")
		for _, d := range resp.GetDevices() {
			st := "active"
			if !d.GetActive() {
				st = "inactive (" + d.GetReason() + ")"
			}
			if h := d.GetHeldUntil(); h != nil {
				left := max(0, h.AsTime().Sub(a.now()).Round(time.Second))
				st += fmt.Sprintf(", stale (graceful restart, %s left)", left)
			}
			zs := strings.Join(d.GetZones(), ",")
			if zs == "" {
				zs = "(default)"
			}
			port := ""
			if d.GetPort() != 0 {
				port = fmt.Sprint(d.GetPort())
			}
			row(w, d.GetAddress(), roleName(d.GetRole()), d.GetProtocol(), port, d.GetNqn(), d.GetSwitch(), st, zs)
		}
	})
}

func roleName(r inofv1.Role) string {
	return strings.ToLower(strings.TrimPrefix(r.String(), "ROLE_"))
}

func (a *app) deviceWhy(ctx context.Context, c inofv1.FabricClient, args []string) error {
	resp, err := c.Why(ctx, &inofv1.WhyRequest{Host: args[0], Target: args[1]})
	if err != nil {
		return err
	}
	v, err := plain(resp)
	if err != nil {
		return err
	}
	return a.print(v, func(w io.Writer) {
		verb := "does not see"
		if resp.GetVisible() {
			verb = "sees"
		}
		fmt.Fprintf(w, "%s %s %s: %s\n", args[0], verb, args[1], resp.GetReason())
	})
}

func (a *app) deviceVisibility(ctx context.Context, c inofv1.FabricClient, host string, visibleOnly bool) error {
	resp, err := c.Visibility(ctx, &inofv1.VisibilityRequest{Host: host, VisibleOnly: visibleOnly})
	if err != nil {
		return err
	}
	return a.printVisibility(resp, "TARGET", (*inofv1.WhyResponse).GetTarget)
}

// printVisibility lists explained pairs by the device other names.
func (a *app) printVisibility(resp *inofv1.VisibilityResponse, heading string, other func(*inofv1.WhyResponse) string) error {
	list, err := plainList(resp.GetTargets())
	if err != nil {
		return err
	}
	return a.print(list, func(w io.Writer) {
		row(w, heading, "SEES", "WHY")
		for _, t := range resp.GetTargets() {
			row(w, other(t), yesNo(t.GetVisible()), t.GetReason())
		}
	})
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
