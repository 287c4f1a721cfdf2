package cli

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

func (a *app) sessionCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "session", Short: "BGP sessions"}
	cmd.AddCommand(&cobra.Command{Use: "list", Short: "List the BGP sessions", Args: cobra.NoArgs, RunE: a.run(a.sessionList)})
	return group(cmd)
}

func (a *app) bfdCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "bfd", Short: "BFD sessions"}
	cmd.AddCommand(&cobra.Command{Use: "list", Short: "List the BFD sessions", Args: cobra.NoArgs, RunE: a.run(a.bfdList)})
	return group(cmd)
}

func (a *app) sessionList(ctx context.Context, c inofv1.FabricClient, _ []string) error {
	resp, err := c.ListSessions(ctx, &inofv1.ListSessionsRequest{})
	if err != nil {
		return err
	}
	list, err := plainList(resp.GetSessions())
	if err != nil {
		return err
	}
	return a.print(list, func(w io.Writer) {
		row(w, "PEER", "KIND", "STATE", "SINCE", "RECEIVED", "ADVERTISED")
		for _, s := range resp.GetSessions() {
			row(w, s.GetPeer(), s.GetKind(), s.GetState(), since(s.GetSince()), s.GetReceived(), s.GetAdvertised())
		}
	})
}

func (a *app) bfdList(ctx context.Context, c inofv1.FabricClient, _ []string) error {
	resp, err := c.ListBFDSessions(ctx, &inofv1.ListBFDSessionsRequest{})
	if err != nil {
		return err
	}
	list, err := plainList(resp.GetSessions())
	if err != nil {
		return err
	}
	return a.print(list, func(w io.Writer) {
		row(w, "PEER", "LOCAL", "STATE", "DIAGNOSTIC", "SINCE", "TX-MS", "RX-MS", "MULT")
		for _, s := range resp.GetSessions() {
			row(w, s.GetPeer(), s.GetLocal(), s.GetState(), s.GetDiagnostic(), since(s.GetSince()),
				s.GetTxIntervalMs(), s.GetRxIntervalMs(), s.GetDetectMult())
		}
	})
}

// since formats a timestamp (UTC, seconds); unset prints "-".
func since(t *timestamppb.Timestamp) string {
	if t == nil {
		return ""
	}
	return t.AsTime().UTC().Format(time.RFC3339)
}
