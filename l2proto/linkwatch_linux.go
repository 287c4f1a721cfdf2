//go:build linux

package l2proto

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// LinkState is the carrier state of one interface.
type LinkState struct {
	Index int
	Name  string
	// Running is IFF_RUNNING (operationally up, as nvme-snsd checks it);
	// false once the link is deleted.
	Running bool
}

// DefaultLinkWatchWake bounds how long a LinkWatcher's Run takes to return
// after ctx ends; it is also how often an idle watcher re-reads the links.
const DefaultLinkWatchWake = time.Second

// LinkWatcher reports carrier changes of the interfaces in one network
// namespace from rtnetlink, the fast path for "link down" (reason 1):
// nvme-snsd never says goodbye, so without it a switch would wait for the
// 120 s age-out.
//
// It subscribes with netlink.LinkSubscribeWithOptions and ListExisting, so
// every subscription starts with a dump of all links. A subscription ends on
// any receive error: ENOBUFS (events were lost), or the receive timeout
// (Wake) that lets Run stop without leaking the library's reader goroutine
// (vishvananda/netlink#542), or EINTR (a signal; nothing is lost). Run then subscribes again, and the new dump
// reports whatever changed meanwhile. A link deleted while events were lost
// is missing from the dump; it is reported down when the next subscription
// ends idle, its dump then being known complete.
type LinkWatcher struct {
	ns        *netns.NsHandle // nil: the process's own namespace
	subscribe func(chan<- netlink.LinkUpdate, <-chan struct{}, netlink.LinkSubscribeOptions) error
	wake      time.Duration
	rcvbuf    int
	log       *slog.Logger

	// Lost counts subscriptions that ended with an error other than the
	// idle timeout (events may have been lost; links were re-read);
	// interrupted those a signal ended (EINTR: nothing lost, links re-read
	// all the same).
	lost, interrupted atomic.Uint64
}

// startNetNS identifies the network namespace the process started in, read
// during package initialisation, when the main thread cannot have left it
// yet. Later, /proc/self/ns/net names the main thread's namespace, which a
// goroutine locked to the main thread may have switched (as tests in
// namespaces do).
var startNetNS = func() (st unix.Stat_t) {
	_ = unix.Stat("/proc/self/ns/net", &st) // zero if /proc is missing: never "own"
	return st
}()

// NewLinkWatcher returns a watcher of the calling thread's network
// namespace that logs to log (the daemon's logger, so that its lines take
// the configured format). Outside the namespace the process started in,
// re-subscribing needs CAP_SYS_ADMIN (setns).
func NewLinkWatcher(log *slog.Logger) (*LinkWatcher, error) {
	if log == nil {
		return nil, errors.New("l2proto: link watcher needs a logger")
	}
	w := &LinkWatcher{subscribe: netlink.LinkSubscribeWithOptions, wake: DefaultLinkWatchWake,
		rcvbuf: 1 << 20, log: log}
	cur, err := netns.Get()
	if err != nil {
		return nil, fmt.Errorf("l2proto: current network namespace: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(cur), &st); err != nil {
		cur.Close()
		return nil, fmt.Errorf("l2proto: current network namespace: %w", err)
	}
	if startNetNS.Ino != 0 && st.Dev == startNetNS.Dev && st.Ino == startNetNS.Ino {
		cur.Close()
	} else {
		w.ns = &cur
	}
	return w, nil
}

// LostEvents returns how many times link events were lost (and all links
// re-read).
func (w *LinkWatcher) LostEvents() uint64 { return w.lost.Load() }

// linkSub is one netlink subscription.
type linkSub struct {
	ch      chan netlink.LinkUpdate
	done    chan struct{}
	lastErr atomic.Pointer[error]
}

// Run calls fn from Run's goroutine, without locks held, with the state of
// every link when it starts, then with every carrier change, until ctx
// ends. It returns ctx.Err() after every goroutine it started has ended (at
// most Wake after ctx ends) and releases the watcher; call it once. It
// returns early only if the first subscription fails.
func (w *LinkWatcher) Run(ctx context.Context, fn func(LinkState)) error {
	defer func() {
		if w.ns != nil {
			w.ns.Close()
		}
	}()
	state := map[int]LinkState{}
	retry := 100 * time.Millisecond
	for first := true; ; first = false {
		sub, err := w.start()
		if err != nil {
			if first {
				return fmt.Errorf("l2proto: subscribe to link events: %w", err)
			}
			w.log.Warn("re-subscribing to link events failed", "err", err, "retry_in", retry)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(retry):
			}
			retry = min(2*retry, 5*time.Second)
			continue
		}
		retry = 100 * time.Millisecond
		if !w.consume(ctx, sub, state, fn) {
			return ctx.Err()
		}
	}
}

func (w *LinkWatcher) start() (*linkSub, error) {
	s := &linkSub{ch: make(chan netlink.LinkUpdate, 64), done: make(chan struct{})}
	tv := unix.NsecToTimeval(w.wake.Nanoseconds())
	err := w.subscribe(s.ch, s.done, netlink.LinkSubscribeOptions{
		Namespace:         w.ns,
		ListExisting:      true,
		ReceiveTimeout:    &tv,
		ReceiveBufferSize: w.rcvbuf,
		ErrorCallback:     func(err error) { s.lastErr.Store(&err) },
	})
	if err != nil {
		close(s.done) // releases the socket if it was opened
		return nil, err
	}
	return s, nil
}

// consume applies the updates of one subscription until it ends (true:
// subscribe again) or ctx ends (false). Either way the subscription's
// goroutines have ended when it returns.
func (w *LinkWatcher) consume(ctx context.Context, s *linkSub, state map[int]LinkState, fn func(LinkState)) bool {
	seen := map[int]bool{}
	for {
		select {
		case <-ctx.Done():
			close(s.done)
			for range s.ch {
				// The reader ends at its next receive timeout.
			}
			return false
		case u, ok := <-s.ch:
			if !ok {
				close(s.done)
				w.ended(s, state, seen, fn)
				return true
			}
			seen[int(u.Index)] = true
			apply(u, state, fn)
		}
	}
}

// ended handles the end of a subscription.
func (w *LinkWatcher) ended(s *linkSub, state map[int]LinkState, seen map[int]bool, fn func(LinkState)) {
	var err error
	if p := s.lastErr.Load(); p != nil {
		err = *p
	}
	if err != nil && strings.Contains(err.Error(), unix.EAGAIN.Error()) {
		// Idle: the dump and every event were read. A link it did not
		// mention is gone (deleted while an earlier subscription lost
		// events).
		for idx, st := range state {
			if !seen[idx] {
				delete(state, idx)
				if st.Running {
					st.Running = false
					fn(st)
				}
			}
		}
		return
	}
	if err != nil && strings.Contains(err.Error(), unix.EINTR.Error()) {
		// A signal interrupted the receive (SIGHUP, a profiler): nothing
		// was lost, but the library ends the subscription on any error,
		// so the next one reads the links again. Its dump may have been
		// cut short, so nothing is concluded from what it did not show.
		w.interrupted.Add(1)
		w.log.Debug("link event subscription interrupted by a signal; subscribing again", "err", err)
		return
	}
	if err == nil {
		err = errors.New("subscription closed")
	}
	w.lost.Add(1)
	w.log.Warn("link events lost; re-reading all links", "err", err)
}

// apply reports u if it changes a link's carrier (or is the first news of
// the link).
func apply(u netlink.LinkUpdate, state map[int]LinkState, fn func(LinkState)) {
	idx := int(u.Index)
	old, known := state[idx]
	name := old.Name
	if u.Link != nil && u.Link.Attrs() != nil {
		name = u.Link.Attrs().Name
	}
	st := LinkState{Index: idx, Name: name}
	if u.Header.Type == unix.RTM_DELLINK {
		delete(state, idx)
		if !known || old.Running {
			fn(st)
		}
		return
	}
	st.Running = u.IfInfomsg.Flags&unix.IFF_RUNNING != 0
	state[idx] = st
	if !known || old.Running != st.Running {
		fn(st)
	}
}
