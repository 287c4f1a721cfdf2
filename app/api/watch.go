package api

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// watchBatch bounds the events copied out of the feed under its lock.
const watchBatch = 256

// eventsAPI takes the call that follows the event feed.
type eventsAPI struct {
	events  *Feed
	closing <-chan struct{} // closed when the server shuts down
}

// WatchEvents sends the kept events after the client's position, then (with
// follow) new ones as they come. A client that resumes after events the
// ring no longer holds, or falls behind while following, gets a gap event
// naming the lost sequence numbers; one that resumes across a server
// restart (another epoch) gets a gap and the new epoch from its start.
func (s *eventsAPI) WatchEvents(req *inofv1.WatchEventsRequest, stream grpc.ServerStreamingServer[inofv1.Event]) error {
	f := s.events
	after := req.GetAfterSeq()
	if req.GetEpoch() != 0 && req.GetEpoch() != f.Epoch() {
		gap := &inofv1.Event{Epoch: f.Epoch(), Kind: "gap", GapFrom: after + 1, Time: timestamppb.Now(),
			Message: fmt.Sprintf("the server restarted: events after %d of epoch %d are lost; starting epoch %d from its beginning",
				after, req.GetEpoch(), f.Epoch())}
		if err := stream.Send(gap); err != nil {
			return err
		}
		after = 0
	} else if last := f.Last(); after > last {
		return status.Errorf(codes.OutOfRange, "after_seq %d is beyond the last event %d of epoch %d", after, last, f.Epoch())
	}
	// after_seq 0 asks for the oldest event kept: nothing is lost before it.
	fromOldest := after == 0
	keep := eventFilter(req)
	for {
		evs, oldest, wake := f.read(after, watchBatch)
		if !fromOldest && after+1 < oldest {
			gap := &inofv1.Event{Epoch: f.Epoch(), Kind: "gap", GapFrom: after + 1, GapTo: oldest - 1, Time: timestamppb.Now(),
				Message: fmt.Sprintf("events %d to %d were dropped before this client read them (the server keeps %d)",
					after+1, oldest-1, len(f.ring))}
			if err := stream.Send(gap); err != nil {
				return err
			}
		}
		fromOldest = false
		for _, e := range evs {
			after = e.Seq
			if !keep(e) {
				continue
			}
			if err := stream.Send(eventProto(f.Epoch(), e)); err != nil {
				return err
			}
		}
		if len(evs) == watchBatch {
			continue
		}
		if !req.GetFollow() {
			return nil
		}
		select {
		case <-wake:
		case <-stream.Context().Done():
			return stream.Context().Err()
		case <-s.closing:
			return status.Error(codes.Unavailable, "server shutting down; resume with the last epoch and seq")
		}
	}
}

func eventProto(epoch uint64, e Event) *inofv1.Event {
	return &inofv1.Event{Epoch: epoch, Seq: e.Seq, Time: timestamppb.New(e.Time), Kind: e.Kind,
		Subject: e.Subject, Message: e.Message, Attributes: e.Attributes}
}

// eventFilter returns the predicate of the request's filters: kinds,
// subject, since (unset ones pass everything).
func eventFilter(req *inofv1.WatchEventsRequest) func(Event) bool {
	kinds := req.GetKinds()
	subject := req.GetSubject()
	var since time.Time
	if req.GetSince() != nil {
		since = req.GetSince().AsTime()
	}
	return func(e Event) bool {
		return (len(kinds) == 0 || slices.Contains(kinds, e.Kind)) &&
			(subject == "" || e.Subject == subject) &&
			(since.IsZero() || !e.Time.Before(since))
	}
}

// keptEvents returns the events f keeps that pass keep, oldest first.
func keptEvents(f *Feed, keep func(Event) bool) []*inofv1.Event {
	var out []*inofv1.Event
	for after := uint64(0); ; {
		evs, _, _ := f.read(after, watchBatch)
		for _, e := range evs {
			if keep(e) {
				out = append(out, eventProto(f.Epoch(), e))
			}
			after = e.Seq
		}
		if len(evs) < watchBatch {
			return out
		}
	}
}
