package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// reflectorCmds are the commands of inofctl reflector.
type reflectorCmds struct{ *app }

func (a reflectorCmds) reflectorCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "reflector", Short: "The fabric's reflectors side by side"}
	cmd.AddCommand(a.listVerb(&cobra.Command{Use: "list", Short: "List the reflectors with their revisions and generation clocks",
		Long: "Lists the reflector you ask (\"this\") and each peer reflector it hears, side by side: this\n" +
			"reflector's zoning revision, each one's generation clock (for a peer, the newest generation\n" +
			"among the configuration parts it originates) and how far that is ahead of the asked\n" +
			"reflector's wall clock, the configuration parts it originates, and the state: a reflector\n" +
			"whose clock is more than the allowed skew ahead has its changes refused by the others\n" +
			"(\"refused-future\", with the parts held back), a peer that lacks this reflector's parts\n" +
			"has not taken them (\"lacks N\"). Ask each reflector to see both sides; docs/operations.md,\n" +
			"\"Recovery\", says how to recover.",
		Args: cobra.NoArgs}, []string{"zoning", "session", "conflict", "lossless", "fabric"}, a.reflectorList))
	return group(cmd)
}

func (a reflectorCmds) reflectorList(ctx context.Context, c inofv1.FabricClient, _ []string) error {
	resp, err := c.ListReflectors(ctx, &inofv1.ListReflectorsRequest{})
	if err != nil {
		return err
	}
	v, err := plain(resp)
	if err != nil {
		return err
	}
	skew := time.Duration(resp.GetMaxSkewMs()) * time.Millisecond
	if err := a.print("Reflectors", v, func(w io.Writer) {
		a.header(w, "ROUTER-ID", "ADDRESS", "SESSION", "REVISION", "GENERATION-CLOCK", "AHEAD", "PARTS", "STATE")
		for _, r := range resp.GetReflectors() {
			id := dash(r.GetRouterId())
			if r.GetSelf() {
				id += " (this)"
			}
			row(w, id, dash(r.GetAddress()), dash(r.GetSession()), dash(r.GetRevision()), dash(since(r.GetClock())),
				aheadText(r.GetAheadMs()), r.GetParts(), reflectorState(r, skew))
		}
	}); err != nil {
		return err
	}
	for _, r := range resp.GetReflectors() {
		if ahead := time.Duration(r.GetAheadMs()) * time.Millisecond; ahead > skew {
			fmt.Fprintf(a.io.Err, "warning: reflector %s's generation clock is %s ahead of %s's wall clock (limit %s): "+
				"the other reflectors refuse its changes (docs/operations.md, \"Recovery\")\n",
				r.GetRouterId(), aheadText(r.GetAheadMs()), selfID(resp), skew)
		}
	}
	return nil
}

// reflectorState says whether a reflector's changes are refused, or
// whether it lacks the asked reflector's.
func reflectorState(r *inofv1.Reflector, skew time.Duration) string {
	var s string
	switch {
	case r.GetSelf() && r.GetRefusedByPeers():
		s = "ahead: peers refuse its changes"
	case r.GetDeferredParts() > 0:
		s = fmt.Sprintf("refused-future (%d parts held)", r.GetDeferredParts())
	case time.Duration(r.GetAheadMs())*time.Millisecond > skew:
		s = "refused-future"
	}
	if n := r.GetBehindParts(); n > 0 {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("lacks %d", n)
	}
	if s == "" {
		return "ok"
	}
	return s
}

// aheadText prints a clock's lead in days, hours, minutes and seconds
// ("-" for none).
func aheadText(ms int64) string {
	d := (time.Duration(ms) * time.Millisecond).Round(time.Second)
	if d <= 0 {
		return "-"
	}
	if days := d / (24 * time.Hour); days > 0 {
		return fmt.Sprintf("%dd%s", days, (d % (24 * time.Hour)).String())
	}
	return d.String()
}

func selfID(resp *inofv1.ListReflectorsResponse) string {
	for _, r := range resp.GetReflectors() {
		if r.GetSelf() {
			return r.GetRouterId()
		}
	}
	return "this reflector"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
