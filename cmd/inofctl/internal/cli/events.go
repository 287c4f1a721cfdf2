package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"gopkg.in/yaml.v3"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/inof"
)

// eventsFlags are the flags of `inofctl events`.
type eventsFlags struct {
	follow bool
	epoch  uint64
	after  uint64
}

func (a *app) eventsCommand() *cobra.Command {
	var f eventsFlags
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Print the event feed: registrations, records, notifications, sessions, zoning",
		Long: "Prints the events the server keeps, oldest first. --follow keeps printing new ones and,\n" +
			"when the connection drops, reconnects and resumes after the last event printed. A \"gap\"\n" +
			"line says which events were lost (the server keeps a bounded number, and restarts anew).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return runError{err}
			}
			ctx := cmd.Context()
			if !f.follow {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, a.opts.Timeout)
				defer cancel()
			}
			if err := a.events(ctx, c, f); err != nil {
				return runError{err}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&f.follow, "follow", "f", false, "keep printing new events; reconnect and resume when the connection drops")
	cmd.Flags().Uint64Var(&f.epoch, "epoch", 0, "resume: the epoch of the last event seen")
	cmd.Flags().Uint64Var(&f.after, "after", 0, "resume: the sequence number of the last event seen")
	return cmd
}

// events prints the feed. Following, it waits for the server when it is
// away, resumes where it stopped when the stream breaks (pausing a little
// longer each time in a row, up to 10 s) and ends without error when ctx
// ends (a signal).
func (a *app) events(ctx context.Context, c inofv1.FabricClient, f eventsFlags) error {
	pause := 500 * time.Millisecond
	for {
		got, err := a.eventStream(ctx, c, &f)
		if f.follow && ctx.Err() != nil {
			return nil
		}
		if err == nil || !f.follow || status.Code(err) != codes.Unavailable {
			return err
		}
		if got {
			pause = 500 * time.Millisecond
		}
		fmt.Fprintf(a.io.Err, "inofctl: events: %s; reconnecting in %s\n", message(err), pause)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		pause = min(2*pause, 10*time.Second)
	}
}

// eventStream reads one stream to its end, moving f's resume point along;
// it reports whether any event arrived.
func (a *app) eventStream(ctx context.Context, c inofv1.FabricClient, f *eventsFlags) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Following, wait for the server rather than fail while it is away.
	stream, err := c.WatchEvents(ctx, &inofv1.WatchEventsRequest{Epoch: f.epoch, AfterSeq: f.after, Follow: f.follow},
		grpc.WaitForReady(f.follow))
	if err != nil {
		return false, err
	}
	got := false
	for {
		e, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = true
		if err := a.printEvent(e); err != nil {
			return got, err
		}
		f.epoch = e.GetEpoch()
		if e.GetKind() != "gap" {
			f.after = e.GetSeq()
		} else if e.GetGapTo() == 0 {
			f.after = 0 // a restart: the new epoch from its beginning
		}
	}
}

// printEvent writes one event: a line of text, a line of JSON, or a YAML
// document.
func (a *app) printEvent(e *inofv1.Event) error {
	v, err := plain(e)
	if err != nil {
		return err
	}
	switch a.opts.Output {
	case "json":
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		_, err = fmt.Fprintf(a.io.Out, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		_, err = fmt.Fprintf(a.io.Out, "---\n%s", b)
		return err
	}
	if e.GetKind() == "gap" {
		_, err := fmt.Fprintf(a.io.Out, "gap: %s\n", e.GetMessage())
		return err
	}
	attrs := make([]string, 0, len(e.GetAttributes()))
	for k, v := range e.GetAttributes() {
		attrs = append(attrs, k+"="+v)
	}
	sort.Strings(attrs)
	_, err = fmt.Fprintln(a.io.Out, inof.Printable(fmt.Sprintf("%d %s %s %s %s %s", e.GetSeq(), e.GetTime().AsTime().UTC().Format(time.RFC3339Nano),
		e.GetKind(), e.GetSubject(), e.GetMessage(), strings.Join(attrs, " "))))
	return err
}
