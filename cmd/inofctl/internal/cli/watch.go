package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// watchFlags are a list verb's --watch flags.
type watchFlags struct {
	on       bool
	interval time.Duration
}

// listVerb makes cmd a list verb running body, with --watch: the list
// printed again whenever it changes. Changes are noticed from the event
// stream (an event of one of kinds asks for a new rendering) and by
// asking again every --watch-interval, for what changes without an event
// (counters, time left) and for servers without an event stream.
func (a *app) listVerb(cmd *cobra.Command, kinds []string, body func(context.Context, inofv1.FabricClient, []string) error) *cobra.Command {
	var wf watchFlags
	cmd.Flags().BoolVarP(&wf.on, "watch", "w", false, "print the list again whenever it changes, until interrupted")
	cmd.Flags().DurationVar(&wf.interval, "watch-interval", 5*time.Second,
		"with --watch: also ask again this often (besides on each event about the list)")
	once := a.run(body)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if !wf.on {
			return once(cmd, args)
		}
		if wf.interval <= 0 {
			return fmt.Errorf("--watch-interval %s: must be positive", wf.interval)
		}
		c, err := a.client()
		if err != nil {
			return runError{err}
		}
		render := func(ctx context.Context) error { return body(ctx, c, args) }
		if err := a.watch(cmd.Context(), c, wf.interval, kinds, render); err != nil {
			return runError{err}
		}
		return nil
	}
	return cmd
}

// watch renders the list, then renders it again on each event of kinds
// and every interval, printing a rendering only when it differs from the
// last one printed (tables separated by a blank line). It ends without
// error when ctx ends, and with the error of a rendering that fails.
func (a *app) watch(ctx context.Context, c inofv1.FabricClient, interval time.Duration, kinds []string,
	render func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	changed := make(chan struct{}, 1)
	noStream := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := watchEvents(ctx, c, kinds, interval, changed); err != nil {
			noStream <- err
		}
	}()
	defer func() {
		cancel()
		<-done
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	out := a.io.Out
	defer func() { a.io.Out = out }()
	var last []byte
	for {
		var buf bytes.Buffer
		a.io.Out = &buf
		rctx, rcancel := context.WithTimeout(ctx, a.opts.Timeout)
		err := render(rctx)
		rcancel()
		a.io.Out = out
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if last == nil || !bytes.Equal(buf.Bytes(), last) {
			if last != nil && a.opts.Output != "json" && a.opts.Output != "yaml" {
				fmt.Fprintln(out)
			}
			if a.opts.Output == "yaml" && last != nil {
				io.WriteString(out, "---\n")
			}
			if _, err := out.Write(buf.Bytes()); err != nil {
				return err
			}
			last = buf.Bytes()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-changed:
		case err := <-noStream:
			fmt.Fprintf(a.io.Err, "inofctl: no event stream (%s): asking again every %s\n", message(err), interval)
		}
	}
}

// watchEvents follows the event stream of kinds and signals changed on
// each event (coalesced: changed holds one signal). When the stream
// breaks it follows again after interval, until ctx ends (nil); from a
// server without the stream, or one that refuses it, it returns the error
// (the polling goes on alone).
func watchEvents(ctx context.Context, c inofv1.FabricClient, kinds []string, interval time.Duration, changed chan<- struct{}) error {
	for {
		err := func() error {
			stream, err := c.WatchEvents(ctx, &inofv1.WatchEventsRequest{Follow: true, Kinds: kinds}, grpc.WaitForReady(true))
			if err != nil {
				return err
			}
			for {
				if _, err := stream.Recv(); err != nil {
					return err
				}
				select {
				case changed <- struct{}{}:
				default:
				}
			}
		}()
		if ctx.Err() != nil {
			return nil
		}
		if status.Code(err) == codes.Unimplemented || status.Code(err) == codes.PermissionDenied {
			return err
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}
