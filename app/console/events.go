package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// eventStream is WatchEvents' stream in-process: each event is handed to
// send.
type eventStream struct {
	ctx  context.Context
	send func(*inofv1.Event) error
}

func (s eventStream) Send(e *inofv1.Event) error { return s.send(e) }
func (s eventStream) Context() context.Context   { return s.ctx }
func (eventStream) SetHeader(metadata.MD) error  { return nil }
func (eventStream) SendHeader(metadata.MD) error { return nil }
func (eventStream) SetTrailer(metadata.MD)       {}
func (s eventStream) SendMsg(m any) error        { return s.send(m.(*inofv1.Event)) }
func (eventStream) RecvMsg(any) error            { return io.EOF }

// event is one event as the pages and the live stream show it.
type event struct {
	Epoch      uint64            `json:"epoch"`
	Seq        uint64            `json:"seq"`
	Time       time.Time         `json:"time"`
	Kind       string            `json:"kind"`
	Subject    string            `json:"subject"`
	Message    string            `json:"message"`
	Identity   string            `json:"identity"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

func eventOf(e *inofv1.Event) event {
	return event{Epoch: e.GetEpoch(), Seq: e.GetSeq(), Time: e.GetTime().AsTime(), Kind: e.GetKind(), Subject: e.GetSubject(),
		Message: e.GetMessage(), Identity: e.GetAttributes()["identity"], Attributes: e.GetAttributes()}
}

// Attrs lists the attributes but the identity as k=v, sorted.
func (e event) Attrs() string {
	var out []string
	for k, v := range e.Attributes {
		if k != "identity" && v != "" {
			out = append(out, k+"="+v)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// keptEvents returns the events the feed holds now, oldest first, that
// keep says to keep.
func (c *Console) keptEvents(ctx context.Context, keep func(event) bool) ([]event, error) {
	var out []event
	err := c.f.WatchEvents(&inofv1.WatchEventsRequest{}, eventStream{ctx: ctx, send: func(e *inofv1.Event) error {
		if ev := eventOf(e); e.GetKind() != "gap" && keep(ev) {
			out = append(out, ev)
		}
		return nil
	}})
	return out, err
}

// eventFilter is the events page's filter: a kind and a text that the
// subject, the message or an attribute contains.
type eventFilter struct {
	Kind, Text string
}

func (f eventFilter) match(e event) bool {
	if f.Kind != "" && e.Kind != f.Kind {
		return false
	}
	if f.Text == "" {
		return true
	}
	t := strings.ToLower(f.Text)
	return strings.Contains(strings.ToLower(e.Subject+" "+e.Message+" "+e.Identity+" "+e.Attrs()), t)
}

type eventsView struct {
	Filter   eventFilter
	Kinds    []string
	Events   []event // newest first
	Epoch    uint64
	LastSeq  uint64
	Held     int // events the feed holds
	Shown    int
	MaxShown int
}

// eventKinds are the kinds a reflector's feed carries (app/api Event).
var eventKinds = []string{"record", "session", "zoning", "lossless", "trust", "access", "conflict", "backup", "restore"}

const maxEventsShown = 300

func (c *Console) events(r *http.Request) (string, any, error) {
	ctx, cancel := bounded(r)
	defer cancel()
	q := r.URL.Query()
	f := eventFilter{Kind: q.Get("kind"), Text: q.Get("q")}
	v := eventsView{Filter: f, Kinds: eventKinds, MaxShown: maxEventsShown}
	all, err := c.keptEvents(ctx, func(event) bool { return true })
	if err != nil {
		return "", nil, err
	}
	v.Held = len(all)
	for i := len(all) - 1; i >= 0 && len(v.Events) < maxEventsShown; i-- {
		if f.match(all[i]) {
			v.Events = append(v.Events, all[i])
		}
	}
	if n := len(all); n > 0 {
		v.Epoch, v.LastSeq = all[n-1].Epoch, all[n-1].Seq
	}
	v.Shown = len(v.Events)
	return "Events", v, nil
}

// stream is the live feed as Server-Sent Events: each event of the feed
// after ?after= (or the Last-Event-ID a reconnecting browser sends,
// "epoch:seq") as one JSON message, until the client goes or the server
// stops. A gap (events the client missed) is sent as an event of kind
// "gap".
func (c *Console) stream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	req := &inofv1.WatchEventsRequest{Follow: true}
	pos := r.Header.Get("Last-Event-ID")
	if pos == "" {
		pos = r.URL.Query().Get("epoch") + ":" + r.URL.Query().Get("after")
	}
	if ep, seq, ok := strings.Cut(pos, ":"); ok {
		req.Epoch, _ = strconv.ParseUint(ep, 10, 64)
		req.AfterSeq, _ = strconv.ParseUint(seq, 10, 64)
	}
	if r.Header.Get("Last-Event-ID") == "" && r.URL.Query().Get("from") == "now" {
		// Only what happens from now on: start after the latest event kept.
		if err := c.f.WatchEvents(&inofv1.WatchEventsRequest{}, eventStream{ctx: r.Context(), send: func(e *inofv1.Event) error {
			req.Epoch, req.AfterSeq = e.GetEpoch(), max(req.AfterSeq, e.GetSeq())
			return nil
		}}); err != nil {
			http.Error(w, err.Error(), httpStatus(status.Code(err)))
			return
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	fl.Flush()
	err := c.f.WatchEvents(req, eventStream{ctx: r.Context(), send: func(e *inofv1.Event) error {
		ev := eventOf(e)
		if e.GetKind() == "gap" {
			ev.Attributes = map[string]string{"from": strconv.FormatUint(e.GetGapFrom(), 10), "to": strconv.FormatUint(e.GetGapTo(), 10)}
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		if e.GetSeq() != 0 {
			fmt.Fprintf(w, "id: %d:%d\n", e.GetEpoch(), e.GetSeq())
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err
		}
		fl.Flush()
		return nil
	}})
	if err != nil && r.Context().Err() == nil {
		c.log.Debug("console: event stream ended", "err", err)
	}
}
