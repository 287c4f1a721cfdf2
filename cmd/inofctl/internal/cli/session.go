package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// sessionCmds are the commands of inofctl session and inofctl bfd.
type sessionCmds struct{ *app }

func (a sessionCmds) sessionCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "session", Short: "BGP sessions"}
	list := &cobra.Command{Use: "list", Short: "List the BGP sessions", Args: cobra.NoArgs}
	a.listVerb(list, []string{"session"}, a.sessionList)
	show := &cobra.Command{Use: "show PEER", Short: "Show one BGP session: state, uptime, timers, BFD, records, last down",
		Long: "Shows the BGP session with PEER (its address), as `show bgp neighbor` does: its state and\n" +
			"for how long, the peer's router-id, the source address, the configured timers, End-of-RIB,\n" +
			"the records received and advertised, the BFD session guarding it, the last time it went\n" +
			"down and the session events the server keeps for the peer.",
		Args: cobra.ExactArgs(1), ValidArgsFunction: a.completeSessions, RunE: a.run(a.sessionShow)}
	cmd.AddCommand(list, show)
	return group(cmd)
}

func (a sessionCmds) bfdCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "bfd", Short: "BFD sessions"}
	list := &cobra.Command{Use: "list", Short: "List the BFD sessions", Args: cobra.NoArgs}
	a.listVerb(list, []string{"session"}, a.bfdList)
	cmd.AddCommand(list)
	return group(cmd)
}

func (a sessionCmds) sessionList(ctx context.Context, c inofv1.FabricClient, _ []string) error {
	resp, err := c.ListSessions(ctx, &inofv1.ListSessionsRequest{})
	if err != nil {
		return err
	}
	list, err := plainList(resp.GetSessions())
	if err != nil {
		return err
	}
	return a.print("SessionList", list, func(w io.Writer) {
		if a.wide() {
			a.header(w, "PEER", "KIND", "STATE", "SINCE", "RECEIVED", "ADVERTISED", "ROUTER-ID", "LOCAL", "HOLD", "KEEPALIVE", "BFD", "EOR")
		} else {
			a.header(w, "PEER", "KIND", "STATE", "SINCE", "RECEIVED", "ADVERTISED")
		}
		for _, s := range resp.GetSessions() {
			if a.wide() {
				row(w, s.GetPeer(), s.GetKind(), s.GetState(), since(s.GetSince()), s.GetReceived(), s.GetAdvertised(),
					s.GetRouterId(), s.GetLocalAddress(), timer(s.GetHoldTimeMs()), timer(s.GetKeepaliveMs()), yesNo(s.GetBfd()),
					yesNo(s.GetEndOfRib()))
				continue
			}
			row(w, s.GetPeer(), s.GetKind(), s.GetState(), since(s.GetSince()), s.GetReceived(), s.GetAdvertised())
		}
	})
}

// timer prints a configured interval; 0 is the speaker's default.
func timer(ms uint32) string {
	if ms == 0 {
		return "default"
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

// sessionShow prints one BGP session as GetSession tells it.
func (a sessionCmds) sessionShow(ctx context.Context, c inofv1.FabricClient, args []string) error {
	resp, err := c.GetSession(ctx, &inofv1.GetSessionRequest{Peer: args[0]})
	if err != nil {
		return err
	}
	v, err := plain(resp)
	if err != nil {
		return err
	}
	return a.print("Session", v, func(w io.Writer) { a.sessionDetail(w, resp) })
}

// sessionDetail writes the human form of GetSession's answer.
func (a sessionCmds) sessionDetail(w io.Writer, resp *inofv1.SessionDetail) {
	s := resp.GetSession()
	field := func(k string, v any) { row(w, k+":", v) }
	fmt.Fprintf(w, "BGP session with %s (%s)\n", s.GetPeer(), s.GetKind())
	state := s.GetState()
	if t := s.GetSince(); t != nil {
		if s.GetState() == "established" {
			state += fmt.Sprintf(", up for %s", max(0, a.now().Sub(t.AsTime()).Round(time.Second)))
		}
		state += " since " + since(t)
	}
	field("  State", state)
	field("  Router-id", s.GetRouterId())
	field("  Local address", s.GetLocalAddress())
	mode := "active (connects)"
	if s.GetPassive() {
		mode = "passive (waits for the peer)"
	}
	field("  Mode", mode)
	field("  Timers", fmt.Sprintf("hold %s, keepalive %s (configured)", timer(s.GetHoldTimeMs()), timer(s.GetKeepaliveMs())))
	eor := "not received"
	if s.GetEndOfRib() {
		eor = "received"
	}
	field("  End-of-RIB", eor)
	field("  Records", fmt.Sprintf("%d received, %d advertised", s.GetReceived(), s.GetAdvertised()))
	field("  BFD", bfdText(s, resp.GetBfd()))
	last := "none kept"
	for _, e := range resp.GetEvents() {
		if at := e.GetAttributes(); at["protocol"] == "bgp" && at["state"] != "established" {
			last = stamp(e.GetTime().AsTime()) + " " + e.GetMessage()
		}
	}
	field("  Last down", last)
	fmt.Fprintf(w, "Session events kept: %d\n", len(resp.GetEvents()))
	for _, e := range resp.GetEvents() {
		row(w, "  "+stamp(e.GetTime().AsTime()), eventText(e))
	}
}

// bfdText tells the BFD session guarding a BGP session.
func bfdText(s *inofv1.Session, b *inofv1.BFDSession) string {
	switch {
	case b == nil && s.GetBfd():
		return "configured, no session yet"
	case b == nil:
		return "not configured"
	}
	t := fmt.Sprintf("%s (diagnostic %s), tx %dms rx %dms x%d", b.GetState(), b.GetDiagnostic(), b.GetTxIntervalMs(),
		b.GetRxIntervalMs(), b.GetDetectMult())
	if x := since(b.GetSince()); x != "" {
		t += " since " + x
	}
	return t
}

func (a sessionCmds) bfdList(ctx context.Context, c inofv1.FabricClient, _ []string) error {
	resp, err := c.ListBFDSessions(ctx, &inofv1.ListBFDSessionsRequest{})
	if err != nil {
		return err
	}
	list, err := plainList(resp.GetSessions())
	if err != nil {
		return err
	}
	return a.print("BFDSessionList", list, func(w io.Writer) {
		a.header(w, "PEER", "LOCAL", "STATE", "DIAGNOSTIC", "SINCE", "TX-MS", "RX-MS", "MULT")
		for _, s := range resp.GetSessions() {
			row(w, s.GetPeer(), s.GetLocal(), s.GetState(), s.GetDiagnostic(), since(s.GetSince()),
				s.GetTxIntervalMs(), s.GetRxIntervalMs(), s.GetDetectMult())
		}
	})
}

// since formats a timestamp with stamp; unset is empty (a table prints
// "-").
func since(t *timestamppb.Timestamp) string {
	if t == nil {
		return ""
	}
	return stamp(t.AsTime())
}

// completeSessions completes the first argument with the BGP peers
// (described by kind and state).
func (a sessionCmds) completeSessions(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.completeWith(cmd, func(ctx context.Context, c inofv1.FabricClient) ([]string, error) {
		resp, err := c.ListSessions(ctx, &inofv1.ListSessionsRequest{})
		if err != nil {
			return nil, err
		}
		out := make([]string, 0, len(resp.GetSessions()))
		for _, s := range resp.GetSessions() {
			out = append(out, s.GetPeer()+"\t"+s.GetKind()+", "+s.GetState())
		}
		return out, nil
	})
}
