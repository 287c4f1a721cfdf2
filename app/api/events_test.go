package api_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/api/apitest"
	inofv1 "github.com/openinof/inof/app/api/v1"
)

func publish(f *api.Feed, from, to int) {
	for i := from; i <= to; i++ {
		f.Publish(api.Event{Kind: "record", Subject: fmt.Sprintf("e%d", i)})
	}
}

// drain reads a non-following stream to its end.
func drain(t *testing.T, c inofv1.FabricClient, req *inofv1.WatchEventsRequest) []*inofv1.Event {
	t.Helper()
	s, err := c.WatchEvents(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var out []*inofv1.Event
	for {
		e, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
}

func subjects(es []*inofv1.Event) string {
	s := ""
	for _, e := range es {
		if e.GetKind() == "gap" {
			s += fmt.Sprintf("gap(%d-%d) ", e.GetGapFrom(), e.GetGapTo())
			continue
		}
		s += e.GetSubject() + " "
	}
	return s
}

// A follower that loses its connection resumes after the last event it
// got and misses nothing.
func TestWatchEventsResume(t *testing.T) {
	feed := api.NewFeed(api.FeedOptions{Size: 16})
	_, c := fabric(t, api.ServeOptions{Events: feed})
	publish(feed, 1, 3)

	ctx, cancel := context.WithCancel(context.Background())
	s, err := c.WatchEvents(ctx, &inofv1.WatchEventsRequest{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	var last *inofv1.Event
	for i := 1; i <= 5; i++ {
		if i == 4 {
			publish(feed, 4, 5) // while the client follows
		}
		if last, err = s.Recv(); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("e%d", i); last.GetSubject() != want || last.GetSeq() != uint64(i) {
			t.Fatalf("event %d: %v", i, last)
		}
	}
	cancel() // the connection drops
	publish(feed, 6, 8)

	got := drain(t, c, &inofv1.WatchEventsRequest{Epoch: last.GetEpoch(), AfterSeq: last.GetSeq()})
	if s := subjects(got); s != "e6 e7 e8 " {
		t.Errorf("resumed after %d: %s", last.GetSeq(), s)
	}
}

// A client that resumes after events the ring dropped is told which.
func TestWatchEventsGap(t *testing.T) {
	feed := api.NewFeed(api.FeedOptions{Size: 4})
	_, c := fabric(t, api.ServeOptions{Events: feed})
	publish(feed, 1, 10)
	got := drain(t, c, &inofv1.WatchEventsRequest{Epoch: feed.Epoch(), AfterSeq: 2})
	if s := subjects(got); s != "gap(3-6) e7 e8 e9 e10 " {
		t.Errorf("after 2 with 4 kept: %s", s)
	}
	// From the start: the oldest kept, no gap.
	if s := subjects(drain(t, c, &inofv1.WatchEventsRequest{})); s != "e7 e8 e9 e10 " {
		t.Errorf("from the start: %s", s)
	}
	// Up to date: nothing.
	if got := drain(t, c, &inofv1.WatchEventsRequest{Epoch: feed.Epoch(), AfterSeq: 10}); len(got) != 0 {
		t.Errorf("after the last: %v", got)
	}
	// Beyond the last: refused, not silently skipped.
	s, err := c.WatchEvents(context.Background(), &inofv1.WatchEventsRequest{Epoch: feed.Epoch(), AfterSeq: 11})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); status.Code(err) != codes.OutOfRange {
		t.Errorf("after a future seq: %v, want OutOfRange", err)
	}
}

// Resuming with another epoch (the server restarted) reports the loss and
// starts the new epoch from its beginning.
func TestWatchEventsNewEpoch(t *testing.T) {
	feed := api.NewFeed(api.FeedOptions{Size: 8, Epoch: 2})
	_, c := fabric(t, api.ServeOptions{Events: feed})
	publish(feed, 1, 2)
	got := drain(t, c, &inofv1.WatchEventsRequest{Epoch: 1, AfterSeq: 5})
	if len(got) != 3 || got[0].GetKind() != "gap" || got[0].GetEpoch() != 2 || subjects(got[1:]) != "e1 e2 " {
		t.Errorf("resume across a restart: %v", got)
	}
}

// A zoning commit is published on the feed.
func TestWatchEventsZoningCommit(t *testing.T) {
	feed := api.NewFeed(api.FeedOptions{})
	_, c := fabric(t, api.ServeOptions{Events: feed})
	resp := apply(t, c, createZone("red", "10.0.0.1"))
	got := drain(t, c, &inofv1.WatchEventsRequest{})
	if len(got) != 1 || got[0].GetKind() != "zoning" || got[0].GetSubject() != resp.GetRevision() || got[0].GetAttributes()["records"] != "zone red" {
		t.Errorf("events after a commit: %v", got)
	}
}

// Shutting the server down ends a following stream with Unavailable, the
// code inofctl reconnects on.
func TestWatchEventsShutdown(t *testing.T) {
	dir, err := os.MkdirTemp("", "inofapi")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	feed := api.NewFeed(api.FeedOptions{})
	s, err := api.NewServer(api.ServeOptions{Socket: filepath.Join(dir, "api.sock"), Events: feed,
		Logger: slog.New(slog.DiscardHandler)}, apitest.NewBackend(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	c := dialUnix(t, filepath.Join(dir, "api.sock"))
	stream, err := c.WatchEvents(context.Background(), &inofv1.WatchEventsRequest{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	publish(feed, 1, 1)
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := stream.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("stream at shutdown: %v, want Unavailable", err)
	}
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
