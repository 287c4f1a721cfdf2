package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/api/apitest"
	"github.com/openinof/inof/cmd/inofctl/internal/cli"
	"github.com/openinof/inof/internal/syncbuf"
)

// `events --follow` survives a server restart on the same socket (the feed
// kept, as when only the connection broke): it reconnects, resumes after
// the last event it printed and prints every event once.
func TestEventsFollowReconnects(t *testing.T) {
	dir, err := os.MkdirTemp("", "inofctl")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "api.sock")
	b := apitest.NewBackend(t)
	feed := api.NewFeed(api.FeedOptions{Epoch: 7})
	start := func() (stop func()) {
		s, err := api.NewServer(api.ServeOptions{Socket: sock, Events: feed, Logger: slog.New(slog.DiscardHandler)}, b)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	publish := func(subjects ...string) {
		for _, s := range subjects {
			feed.Publish(api.Event{Kind: "record", Subject: s})
		}
	}

	stop := start()
	publish("e1", "e2")
	pr, pw := io.Pipe()
	var stderr syncbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	go func() {
		exit <- cli.Main(ctx, []string{"--server", "unix://" + sock, "events", "--follow", "-o", "json"},
			cli.IO{In: strings.NewReader(""), Out: pw, Err: &stderr})
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	next := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("output ended: %v; stderr: %s", lines.Err(), stderr.String())
		}
		var env struct {
			APIVersion string
			Kind       string
			Item       struct {
				Seq     uint64 // a number, not a string (issue #30)
				Subject string
			}
		}
		if err := json.Unmarshal(lines.Bytes(), &env); err != nil || env.APIVersion != cli.OutputVersion || env.Kind != "Event" {
			t.Fatalf("%q: %v", lines.Text(), err)
		}
		e := env.Item
		return fmt.Sprintf("%d:%s", e.Seq, e.Subject)
	}
	var got []string
	got = append(got, next(), next())
	stop() // the stream breaks
	publish("e3", "e4")
	stop = start()
	got = append(got, next(), next())
	publish("e5")
	got = append(got, next())
	cancel()
	go io.Copy(io.Discard, pr) // let a last write finish
	if code := <-exit; code != 0 {
		t.Errorf("exit %d after the context ended; stderr: %s", code, stderr.String())
	}
	stop()
	if s := strings.Join(got, " "); s != "1:e1 2:e2 3:e3 4:e4 5:e5" {
		t.Errorf("events printed: %s", s)
	}
	if !strings.Contains(stderr.String(), "reconnecting") {
		t.Errorf("stderr does not report the reconnection: %q", stderr.String())
	}
}
