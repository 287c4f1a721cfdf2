package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	"gopkg.in/yaml.v3"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/inof"
)

// eventsFlags are the flags of `inofctl events`.
type eventsFlags struct {
	follow bool
	epoch  uint64
	after  uint64
	// The filters: kinds (any of them), subject (exact), since (at or
	// after).
	kinds   []string
	subject string
	since   *timestamppb.Timestamp
}

// request is the WatchEvents request of f's position and filters.
func (f *eventsFlags) request() *inofv1.WatchEventsRequest {
	return &inofv1.WatchEventsRequest{Epoch: f.epoch, AfterSeq: f.after, Follow: f.follow, Kinds: f.kinds,
		Subject: f.subject, Since: f.since}
}

// keep applies the filters on the client too (a server before they
// existed sends every event); gaps always pass.
func (f *eventsFlags) keep(e *inofv1.Event) bool {
	if e.GetKind() == "gap" {
		return true
	}
	return (len(f.kinds) == 0 || slices.Contains(f.kinds, e.GetKind())) &&
		(f.subject == "" || e.GetSubject() == f.subject) &&
		(f.since == nil || !e.GetTime().AsTime().Before(f.since.AsTime()))
}

// eventCmds is inofctl events.
type eventCmds struct{ *app }

func (a eventCmds) eventsCommand() *cobra.Command {
	var f eventsFlags
	var sinceFlag string
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Print the event feed: registrations, records, notifications, sessions, zoning",
		Long: "Prints the events the server keeps, oldest first. --follow keeps printing new ones and,\n" +
			"when the connection drops, reconnects and resumes after the last event printed. A \"gap\"\n" +
			"line says which events were lost (the server keeps a bounded number, and restarts anew).\n" +
			"--kind, --subject and --since keep only some events (gap lines always print).\n\n" +
			"A line is: sequence number, time (RFC 3339, UTC, milliseconds), kind, subject, message,\n" +
			"then the attributes the message does not already say.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if f.since, err = parseWhen(sinceFlag, a.now()); err != nil {
				return fmt.Errorf("--since %w", err)
			}
			for _, k := range f.kinds {
				if !slices.Contains(eventKinds, k) {
					return fmt.Errorf("--kind %q: want one of %s", k, strings.Join(eventKinds, ", "))
				}
			}
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
	cmd.Flags().StringSliceVar(&f.kinds, "kind", nil, "only events of these kinds (repeat or separate with commas): "+strings.Join(eventKinds, ", "))
	cmd.Flags().StringVar(&f.subject, "subject", "", "only events about this subject: a device address, a peer, a zone record, …")
	cmd.Flags().StringVar(&sinceFlag, "since", "", "only events at or after this time (RFC 3339) or this long ago (10m, 24h)")
	_ = cmd.RegisterFlagCompletionFunc("kind", cobra.FixedCompletions(eventKinds, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// events prints the feed. Following, it waits for the server when it is
// away, resumes where it stopped when the stream breaks (pausing a little
// longer each time in a row, up to 10 s) and ends without error when ctx
// ends (a signal).
func (a eventCmds) events(ctx context.Context, c inofv1.FabricClient, f eventsFlags) error {
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
func (a eventCmds) eventStream(ctx context.Context, c inofv1.FabricClient, f *eventsFlags) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Following, wait for the server rather than fail while it is away.
	stream, err := c.WatchEvents(ctx, f.request(), grpc.WaitForReady(f.follow))
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
		if f.keep(e) {
			if err := a.printEvent(e); err != nil {
				return got, err
			}
		}
		f.epoch = e.GetEpoch()
		if e.GetKind() != "gap" {
			f.after = e.GetSeq()
		} else if e.GetGapTo() == 0 {
			f.after = 0 // a restart: the new epoch from its beginning
		}
	}
}

// eventKinds are the kinds of events the servers publish (docs/cli.md).
var eventKinds = []string{"registration", "record", "notification", "session", "zoning", "lossless", "trust",
	"access", "conflict", "backup", "fabric", "pin", "gap"}

// printEvent writes one event: a line of text, or its envelope as a line
// of JSON or a YAML document.
func (a eventCmds) printEvent(e *inofv1.Event) error {
	v, err := plain(e)
	if err != nil {
		return err
	}
	env := wrap("Event", "", v)
	switch a.opts.Output {
	case "json":
		b, err := json.Marshal(env)
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		_, err = fmt.Fprintf(a.io.Out, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(env)
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		_, err = fmt.Fprintf(a.io.Out, "---\n%s", b)
		return err
	}
	if e.GetKind() == "gap" {
		_, err := fmt.Fprintf(a.io.Out, "gap: %s\n", inof.Printable(e.GetMessage()))
		return err
	}
	_, err = fmt.Fprintln(a.io.Out, inof.Printable(fmt.Sprintf("%d %s %s %s %s", e.GetSeq(), stamp(e.GetTime().AsTime()),
		e.GetKind(), e.GetSubject(), eventText(e))))
	return err
}

// eventText is an event's message and then the attributes it does not
// already say: none whose value the message or the subject holds, nor an
// empty or "none" one, nor identity "fabric" (the default: no one caused
// it).
func eventText(e *inofv1.Event) string {
	msg := e.GetMessage()
	words := messageWords(msg)
	attrs := make([]string, 0, len(e.GetAttributes()))
	for k, v := range e.GetAttributes() {
		switch {
		case v == "" || v == "none" || v == e.GetSubject() || slices.Contains(words, v),
			k == "identity" && v == "fabric":
			continue
		}
		attrs = append(attrs, k+"="+v)
	}
	if len(attrs) == 0 {
		return msg
	}
	sort.Strings(attrs)
	return msg + " [" + strings.Join(attrs, " ") + "]"
}

// messageWords splits a message into the words an attribute's value may
// repeat: at spaces and punctuation between words, a word's trailing ":"
// or "." left off ("switch 192.0.2.1: link-down").
func messageWords(msg string) []string {
	ws := strings.FieldsFunc(msg, func(r rune) bool { return strings.ContainsRune(" \t,;()[]/=", r) })
	for i, w := range ws {
		ws[i] = strings.TrimRight(w, ":.")
	}
	return ws
}
