package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/inof"
)

// deviceCmds are the commands of inofctl device.
type deviceCmds struct{ *app }

func (a deviceCmds) deviceCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "device", Short: "List and show devices, explain who sees whom"}
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
	}
	a.listVerb(list, []string{"registration", "record", "zoning", "trust"},
		func(ctx context.Context, c inofv1.FabricClient, _ []string) error { return a.deviceList(ctx, c, &req) })
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
	show := &cobra.Command{Use: "show ADDRESS", Short: "Show everything known about one device",
		Long: "Shows one device: its role, protocol, NQN, status and since when, the switch and port that\n" +
			"report it (every switch, when more than one does), its zones, the targets a host sees or\n" +
			"the hosts told about a target (with why), and the events the server keeps about it. When\n" +
			"its NQN is claimed on more than one switch port it lists them (\"claimed on N ports\"):\n" +
			"information, unless a pin (inofctl pin) says which ports may claim it.",
		Args: cobra.ExactArgs(1), ValidArgsFunction: a.completeDevices, RunE: a.run(a.deviceShow)}
	cmd.AddCommand(list, show, why, whoSees)
	return group(cmd)
}

func (a deviceCmds) deviceList(ctx context.Context, c inofv1.FabricClient, req *inofv1.ListDevicesRequest) error {
	resp, err := c.ListDevices(ctx, req)
	if err != nil {
		return err
	}
	list, err := plainList(resp.GetDevices())
	if err != nil {
		return err
	}
	return a.print("DeviceList", list, func(w io.Writer) {
		if a.wide() {
			a.header(w, "ADDRESS", "ROLE", "PROTOCOL", "SWITCH", "PORT", "STATUS", "SINCE", "ZONES", "SERVICE", "NQN")
		} else {
			a.header(w, "ADDRESS", "ROLE", "PROTOCOL", "SWITCH", "PORT", "STATUS", "ZONES", "NQN")
		}
		for _, d := range resp.GetDevices() {
			if a.wide() {
				row(w, d.GetAddress(), roleName(d.GetRole()), d.GetProtocol(), d.GetSwitch(), d.GetAccessPort(), a.deviceStatus(d),
					since(d.GetSince()), deviceZones(d), service(d.GetPort()), d.GetNqn())
				continue
			}
			row(w, d.GetAddress(), roleName(d.GetRole()), d.GetProtocol(), d.GetSwitch(), d.GetAccessPort(), a.deviceStatus(d),
				deviceZones(d), d.GetNqn())
		}
	})
}

// deviceStatus is a device's state in words: "active", "inactive
// (link-down)", with the time a graceful-restart hold has left.
func (a deviceCmds) deviceStatus(d *inofv1.Device) string {
	st := "active"
	if !d.GetActive() {
		st = "inactive (" + d.GetReason() + ")"
	}
	if h := d.GetHeldUntil(); h != nil {
		st += fmt.Sprintf(", stale (graceful restart, %s left)", a.left(h))
	}
	return st
}

// left is the time from now to t, in whole seconds, not below zero.
func (a deviceCmds) left(t *timestamppb.Timestamp) time.Duration {
	return max(0, t.AsTime().Sub(a.now()).Round(time.Second))
}

// deviceZones lists a device's zones, or says that a pin refuses its
// claim to its NQN (then it is in no zone, not the default one).
func deviceZones(d *inofv1.Device) string {
	if d.GetPinRefused() {
		return "(none: pin refused)"
	}
	return zoneText(d.GetZones())
}

// zoneText lists a device's zones ("(default)" for none).
func zoneText(zs []string) string {
	if len(zs) == 0 {
		return "(default)"
	}
	return strings.Join(zs, ",")
}

// service is the NVMe-oF service id (trsvcid): empty for the protocol's
// default.
func service(port uint32) string {
	if port == 0 {
		return ""
	}
	return fmt.Sprint(port)
}

// deviceShow prints everything the server knows about one address.
func (a deviceCmds) deviceShow(ctx context.Context, c inofv1.FabricClient, args []string) error {
	resp, err := c.GetDevice(ctx, &inofv1.GetDeviceRequest{Address: args[0]})
	if err != nil {
		return err
	}
	v, err := plain(resp)
	if err != nil {
		return err
	}
	return a.print("Device", v, func(w io.Writer) { a.deviceDetail(w, resp) })
}

// deviceDetail writes the human form of GetDevice's answer: the device,
// the switches that report it, its visibility and its kept events.
func (a deviceCmds) deviceDetail(w io.Writer, resp *inofv1.DeviceDetail) {
	d := resp.GetDevice()
	field := func(k string, v any) { row(w, k+":", v) }
	fmt.Fprintf(w, "Device %s\n", inof.Printable(d.GetAddress()))
	field("  Role", roleName(d.GetRole()))
	proto := d.GetProtocol()
	if p := service(d.GetPort()); p != "" {
		proto += ", service " + p
	}
	field("  Protocol", proto)
	field("  NQN", d.GetNqn())
	status := a.deviceStatus(d)
	if s := since(d.GetSince()); s != "" {
		status += " since " + s
	}
	field("  Status", status)
	at := d.GetSwitch()
	if p := d.GetAccessPort(); p != "" {
		at += " port " + p
	}
	field("  Switch", at)
	field("  Zones", deviceZones(d))
	if d.GetPinRefused() {
		field("  Pin", "refused: its NQN is pinned to other switch ports (inofctl pin list); no host is told about it")
	}
	if cs := resp.GetNqnClaims(); len(cs) > 0 {
		fmt.Fprintf(w, "NQN claimed on %d ports (one device on two ports, or two devices with one NQN: a pin tells which may):\n", claimPorts(cs))
		for _, c := range cs {
			fmt.Fprintf(w, "  %s\n", c)
		}
	}
	fmt.Fprintf(w, "Reported by %d switch(es):\n", len(resp.GetReports()))
	a.header(w, "  SWITCH", "PORT", "STATUS", "SINCE", "FIRST-SEEN", "SHOWN")
	for _, r := range resp.GetReports() {
		st := "active"
		if !r.GetActive() {
			st = "inactive (" + r.GetReason() + ")"
		}
		if h := r.GetHeldUntil(); h != nil {
			st += fmt.Sprintf(", stale (%s left)", a.left(h))
		}
		row(w, "  "+r.GetSwitch(), r.GetAccessPort(), st, since(r.GetSince()), since(r.GetFirstSeen()), yesNo(r.GetShown()))
	}
	heading, other := "TARGET", (*inofv1.WhyResponse).GetTarget
	title := "Targets it sees"
	if !isHost(d.GetRole()) {
		heading, other = "HOST", (*inofv1.WhyResponse).GetHost
		title = "Hosts told about it (those that see it)"
	}
	seen := 0
	for _, x := range resp.GetVisibility() {
		if x.GetVisible() {
			seen++
		}
	}
	fmt.Fprintf(w, "%s: %d of %d\n", title, seen, len(resp.GetVisibility()))
	a.header(w, "  "+heading, "SEES", "WHY")
	for _, x := range resp.GetVisibility() {
		row(w, "  "+other(x), yesNo(x.GetVisible()), x.GetReason())
	}
	fmt.Fprintf(w, "Events kept: %d\n", len(resp.GetEvents()))
	for _, e := range resp.GetEvents() {
		row(w, "  "+stamp(e.GetTime().AsTime()), e.GetKind(), eventText(e))
	}
}

// claimPorts counts the switch ports of GetDevice's nqn_claims
// ("SWITCH:PORT ADDRESS").
func claimPorts(cs []string) int {
	ports := map[string]bool{}
	for _, c := range cs {
		at, _, _ := strings.Cut(c, " ")
		ports[at] = true
	}
	return len(ports)
}

// isHost reports whether a role is a host's (a device of role both is
// one).
func isHost(r inofv1.Role) bool { return r == inofv1.Role_ROLE_HOST || r == inofv1.Role_ROLE_BOTH }

func roleName(r inofv1.Role) string {
	return strings.ToLower(strings.TrimPrefix(r.String(), "ROLE_"))
}

func (a deviceCmds) deviceWhy(ctx context.Context, c inofv1.FabricClient, args []string) error {
	resp, err := c.Why(ctx, &inofv1.WhyRequest{Host: args[0], Target: args[1]})
	if err != nil {
		return err
	}
	v, err := plain(resp)
	if err != nil {
		return err
	}
	return a.print("Why", v, func(w io.Writer) {
		verb := "does not see"
		if resp.GetVisible() {
			verb = "sees"
		}
		fmt.Fprintf(w, "%s %s %s: %s\n", args[0], verb, args[1], resp.GetReason())
	})
}

func (a deviceCmds) deviceVisibility(ctx context.Context, c inofv1.FabricClient, host string, visibleOnly bool) error {
	resp, err := c.Visibility(ctx, &inofv1.VisibilityRequest{Host: host, VisibleOnly: visibleOnly})
	if err != nil {
		return err
	}
	return a.printVisibility(resp, "TARGET", (*inofv1.WhyResponse).GetTarget)
}

// printVisibility lists explained pairs by the device other names.
func (a deviceCmds) printVisibility(resp *inofv1.VisibilityResponse, heading string, other func(*inofv1.WhyResponse) string) error {
	list, err := plainList(resp.GetTargets())
	if err != nil {
		return err
	}
	return a.print("VisibilityList", list, func(w io.Writer) {
		a.header(w, heading, "SEES", "WHY")
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

// completeDevices completes the first argument with the registered
// devices' addresses (described by role and switch).
func (a deviceCmds) completeDevices(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.completeWith(cmd, func(ctx context.Context, c inofv1.FabricClient) ([]string, error) {
		resp, err := c.ListDevices(ctx, &inofv1.ListDevicesRequest{})
		if err != nil {
			return nil, err
		}
		out := make([]string, 0, len(resp.GetDevices()))
		for _, d := range resp.GetDevices() {
			out = append(out, d.GetAddress()+"\t"+roleName(d.GetRole())+" on "+d.GetSwitch())
		}
		return out, nil
	})
}
