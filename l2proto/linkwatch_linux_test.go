//go:build linux

package l2proto

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/openinof/inof/internal/syncbuf"
)

// fakeNetlink stands in for netlink.LinkSubscribeWithOptions: a table of
// links, and subscriptions the test feeds or ends as the kernel would.
type fakeNetlink struct {
	mu    sync.Mutex
	links map[int]LinkState
	subs  []*fakeSub
	opts  []netlink.LinkSubscribeOptions
	wg    sync.WaitGroup // the "library" goroutines
	newSb chan *fakeSub
}

type fakeSub struct {
	actions chan fakeAction
	done    <-chan struct{}
}

type fakeAction struct {
	u   *netlink.LinkUpdate
	err error // ends the subscription, as a receive error does
}

func newFakeNetlink() *fakeNetlink {
	return &fakeNetlink{links: map[int]LinkState{}, newSb: make(chan *fakeSub, 16)}
}

func update(st LinkState, del bool) netlink.LinkUpdate {
	var u netlink.LinkUpdate
	u.Index = int32(st.Index)
	u.Header.Type = unix.RTM_NEWLINK
	if del {
		u.Header.Type = unix.RTM_DELLINK
	}
	if st.Running {
		u.Flags = unix.IFF_UP | unix.IFF_RUNNING
	}
	u.Link = &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Index: st.Index, Name: st.Name}}
	return u
}

func (f *fakeNetlink) subscribe(ch chan<- netlink.LinkUpdate, done <-chan struct{}, opts netlink.LinkSubscribeOptions) error {
	f.mu.Lock()
	s := &fakeSub{actions: make(chan fakeAction, 1024), done: done}
	f.subs = append(f.subs, s)
	f.opts = append(f.opts, opts)
	if opts.ListExisting {
		var idx []int
		for i := range f.links {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		for _, i := range idx {
			u := update(f.links[i], false)
			s.actions <- fakeAction{u: &u}
		}
	}
	f.mu.Unlock()
	f.wg.Add(1)
	go func() {
		// Like netlink's reader: deliver in order; an error ends it
		// through the callback; after done, the socket is closed and the
		// next receive fails (here at once; for real at the timeout).
		defer f.wg.Done()
		defer close(ch)
		for {
			select {
			case a := <-s.actions:
				if a.err != nil {
					opts.ErrorCallback(fmt.Errorf("Receive failed: %v", a.err))
					return
				}
				select {
				case ch <- *a.u:
				case <-done:
					opts.ErrorCallback(fmt.Errorf("Receive failed: %v", syscall.EBADF))
					return
				}
			case <-done:
				opts.ErrorCallback(fmt.Errorf("Receive failed: %v", syscall.EBADF))
				return
			}
		}
	}()
	f.newSb <- s
	return nil
}

// set changes a link; live says whether the current subscription hears it.
func (f *fakeNetlink) set(s *fakeSub, st LinkState, del, live bool) {
	f.mu.Lock()
	if del {
		delete(f.links, st.Index)
	} else {
		f.links[st.Index] = st
	}
	f.mu.Unlock()
	if live {
		u := update(st, del)
		s.actions <- fakeAction{u: &u}
	}
}

// TestLinkWatcherRedump: events lost to an overflow (ENOBUFS) are made up by
// the re-dump of the next subscription: a carrier lost meanwhile and a new
// link are reported at once, a deleted link when that subscription has
// been read to its end; ctx's end stops every goroutine.
func TestLinkWatcherRedump(t *testing.T) {
	f := newFakeNetlink()
	eth0, eth1, eth2, eth5 := LinkState{2, "eth0", true}, LinkState{3, "eth1", true}, LinkState{4, "eth2", true}, LinkState{7, "eth5", true}
	for _, l := range []LinkState{eth0, eth1, eth2} {
		f.links[l.Index] = l
	}
	w := &LinkWatcher{subscribe: f.subscribe, wake: time.Second, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	got := make(chan LinkState, 64)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- w.Run(ctx, func(s LinkState) { got <- s }) }()
	expect := func(want ...LinkState) {
		t.Helper()
		for _, wnt := range want {
			select {
			case s := <-got:
				if s != wnt {
					t.Fatalf("reported %+v, want %+v", s, wnt)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("nothing reported, want %+v", wnt)
			}
		}
		select {
		case s := <-got:
			t.Fatalf("unexpected report %+v", s)
		case <-time.After(20 * time.Millisecond):
		}
	}
	nextSub := func() *fakeSub {
		t.Helper()
		select {
		case s := <-f.newSb:
			return s
		case <-time.After(10 * time.Second):
			t.Fatal("no subscription")
			return nil
		}
	}

	sub1 := nextSub()
	expect(eth0, eth1, eth2) // the initial dump
	down1 := eth1
	down1.Running = false
	f.set(sub1, down1, false, true)
	expect(down1)

	// Overflow: three changes are lost, then the reader fails.
	down0 := eth0
	down0.Running = false
	f.set(sub1, down0, false, false)
	f.set(sub1, eth2, true, false)
	f.set(sub1, eth5, false, false)
	sub1.actions <- fakeAction{err: unix.ENOBUFS}
	sub2 := nextSub()
	expect(down0, eth5) // from the re-dump
	if w.LostEvents() != 1 {
		t.Fatalf("lost events %d", w.LostEvents())
	}
	// The second subscription is read to its end (idle timeout): eth2,
	// absent from its dump, is gone.
	sub2.actions <- fakeAction{err: unix.EAGAIN}
	nextSub()
	gone := eth2
	gone.Running = false
	expect(gone)
	if w.LostEvents() != 1 {
		t.Fatalf("lost events %d after an idle end", w.LostEvents())
	}

	f.mu.Lock()
	for i, o := range f.opts {
		if !o.ListExisting || o.ErrorCallback == nil || o.ReceiveTimeout == nil || o.ReceiveTimeout.Sec != 1 {
			t.Errorf("subscription %d options %+v: want ListExisting, an error callback and a 1 s receive timeout", i, o)
		}
	}
	f.mu.Unlock()

	cancel()
	if err := <-runDone; err != context.Canceled {
		t.Fatalf("run: %v", err)
	}
	waited := make(chan struct{})
	go func() { f.wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("subscription goroutines still running after Run returned")
	}
	for i, s := range f.subs {
		select {
		case <-s.done:
		default:
			t.Errorf("subscription %d never released", i)
		}
	}
}

// TestLinkWatcherInterrupted: a receive interrupted by a signal (EINTR)
// ends the library's subscription, but loses nothing: the watcher
// subscribes again without counting lost events or warning, reports no
// link as changed, and logs through the logger it was given (issue #25: it
// logged through slog.Default, ignoring log.format).
func TestLinkWatcherInterrupted(t *testing.T) {
	f := newFakeNetlink()
	eth0 := LinkState{2, "eth0", true}
	f.links[eth0.Index] = eth0
	var logged syncbuf.Buffer
	w := &LinkWatcher{subscribe: f.subscribe, wake: time.Second,
		log: slog.New(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	got := make(chan LinkState, 64)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- w.Run(ctx, func(s LinkState) { got <- s }) }()
	sub := <-f.newSb
	if s := <-got; s != eth0 {
		t.Fatalf("first report %+v", s)
	}
	sub.actions <- fakeAction{err: unix.EINTR}
	sub2 := <-f.newSb
	sub2.actions <- fakeAction{err: unix.EINTR} // again, before its dump was read whole
	<-f.newSb
	if n := w.LostEvents(); n != 0 {
		t.Fatalf("an interrupted receive counted as %d lost events", n)
	}
	select {
	case s := <-got:
		t.Fatalf("reported %+v after an interruption", s)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	<-runDone
	out := logged.String()
	if strings.Contains(out, `"level":"WARN"`) || !strings.Contains(out, `"msg":"link event subscription interrupted by a signal; subscribing again"`) {
		t.Fatalf("log:\n%s", out)
	}
	if _, err := NewLinkWatcher(nil); err == nil {
		t.Fatal("a watcher without a logger")
	}
}

// TestLinkWatcherFirstSubscribeFails: Run reports a subscription it cannot
// make at all.
func TestLinkWatcherFirstSubscribeFails(t *testing.T) {
	w := &LinkWatcher{wake: time.Second, log: slog.Default(),
		subscribe: func(chan<- netlink.LinkUpdate, <-chan struct{}, netlink.LinkSubscribeOptions) error {
			return unix.EPERM
		}}
	if err := w.Run(context.Background(), func(LinkState) {}); err == nil {
		t.Fatal("no error")
	}
}

// TestLinkWatcherReal subscribes for real (no privilege needed) and stops:
// Run returns within the wake interval after ctx ends.
func TestLinkWatcherReal(t *testing.T) {
	w, err := NewLinkWatcher(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	w.wake = 100 * time.Millisecond
	baseline := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var states []LinkState
	done := make(chan error, 1)
	go func() {
		done <- w.Run(ctx, func(s LinkState) { mu.Lock(); states = append(states, s); mu.Unlock() })
	}()
	waitFor(t, "the loopback in the initial dump", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range states {
			if s.Name == "lo" {
				return true
			}
		}
		return false
	})
	time.Sleep(300 * time.Millisecond) // a few idle re-subscriptions
	cancel()
	start := time.Now()
	if err := <-done; err != context.Canceled {
		t.Fatalf("run: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Run took %s to stop", d)
	}
	// netlink's reader and closer goroutines are gone too (the closer
	// may still be returning).
	waitFor(t, "the subscription goroutines to end", func() bool { return runtime.NumGoroutine() <= baseline })
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]int{}
	for _, s := range states {
		seen[s.Name]++
	}
	if seen["lo"] != 1 {
		t.Fatalf("states %+v: the re-dumps must not report unchanged links again", states)
	}
}
