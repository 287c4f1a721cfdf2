package api_test

import (
	"context"
	"io"
	"os"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/api/apiclient"
	"github.com/openinof/inof/app/api/apitest"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/zones"
)

// TestJournalRoles: a viewer reads the history and audit trail and old
// revisions, but can neither take a backup (the whole configuration and
// its history) nor roll back; the commits it tries are not journaled.
func TestJournalRoles(t *testing.T) {
	b := apitest.NewBackend(t)
	tx := b.Store.Begin()
	tx.Note(zones.Note{Identity: "user:alice", Action: zones.ActionCommit, Revision: "r1"})
	if err := tx.CreateZone("red", zones.MustParseMember("10.0.0.1")); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	_, sock := apitest.Serve(t, b, api.ServeOptions{UnixIdentities: []api.UnixIdentity{
		{User: strconv.Itoa(os.Getuid()), Name: "eve", Role: api.RoleViewer}}})
	conn, err := apiclient.Dial(apiclient.DialOptions{Server: "unix://" + sock})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := inofv1.NewFabricClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j, err := c.ListJournal(ctx, &inofv1.ListJournalRequest{})
	if err != nil || len(j.GetEntries()) != 1 || j.GetEntries()[0].GetIdentity() != "user:alice" {
		t.Fatalf("viewer reading the journal: %v %v", j, err)
	}
	if _, err := c.GetRevision(ctx, &inofv1.GetRevisionRequest{Revision: "r1"}); err != nil {
		t.Fatalf("viewer reading a revision: %v", err)
	}
	stream, err := c.Backup(ctx, &inofv1.BackupRequest{})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.PermissionDenied || err == io.EOF {
		t.Fatalf("viewer backup: %v, want PermissionDenied", err)
	}
	_, err = c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Action: "rollback",
		Edits: []*inofv1.Edit{{Edit: &inofv1.Edit_DeleteZone{DeleteZone: &inofv1.DeleteZone{Name: "red"}}}}})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("viewer rollback: %v, want PermissionDenied", err)
	}
	if vs := b.Store.JournalVersions(); len(vs) != 1 {
		t.Fatalf("journal after the refused calls: %d entries", len(vs))
	}
	if _, err := c.ListJournal(ctx, &inofv1.ListJournalRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Action: "bogus", DryRun: true,
		Edits: []*inofv1.Edit{{Edit: &inofv1.Edit_DeleteZone{DeleteZone: &inofv1.DeleteZone{Name: "red"}}}}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("unknown action: %v", err)
	}
}
