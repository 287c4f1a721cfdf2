package soak

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
	"github.com/openinof/inof/zones"
)

// Notice is one notification a probe host received (retransmissions of
// one already recorded are not recorded again).
type Notice struct {
	At     time.Time
	Step   int
	Host   netip.Addr
	Target netip.Addr
	Seq    uint32
	State  inof.State
	Reason inof.Reason
	Dev    inof.Device // the target as the notification describes it
	// Prev is the last notification the host had about the target when
	// this one came (HadPrev false: none since its view was cleared).
	Prev    Notice0
	HadPrev bool
}

// Notice0 is the part of an earlier notification a later one is compared
// with.
type Notice0 struct {
	State inof.State
	Dev   inof.Device
}

func (n Notice) String() string {
	s := fmt.Sprintf("%s → %s %s", n.Target, n.Host, n.State)
	if n.State == inof.StateInactive {
		s += " reason " + n.Reason.String()
	}
	return s + fmt.Sprintf(" (seq %d, step %d, %s)", n.Seq, n.Step, n.At.Format("15:04:05.000"))
}

// Recorder keeps, per host address, the last notification about every
// target, as a probe host that ACKs like nvme-snsd would hold them.
type Recorder struct {
	mu   sync.Mutex
	step int
	last map[netip.Addr]map[netip.Addr]Notice
	// inbox holds what came since the last Drain.
	inbox       []Notice
	retransmits int
	stale       int // for an address the probe no longer has
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{last: map[netip.Addr]map[netip.Addr]Notice{}} }

// SetStep stamps the notifications recorded from now on.
func (r *Recorder) SetStep(n int) {
	r.mu.Lock()
	r.step = n
	r.mu.Unlock()
}

// Record takes a notification read at a probe whose address is now addr.
func (r *Recorder) Record(addr netip.Addr, n l2proto.Notification, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n.Host != addr {
		r.stale++
		return
	}
	byTarget := r.last[n.Host]
	if byTarget == nil {
		byTarget = map[netip.Addr]Notice{}
		r.last[n.Host] = byTarget
	}
	prev, had := byTarget[n.Target]
	if had && prev.Seq == n.Seq && prev.State == n.State && prev.Reason == n.Reason {
		r.retransmits++ // its ACK was lost or late: the same notification again
		return
	}
	rec := Notice{At: at, Step: r.step, Host: n.Host, Target: n.Target, Seq: n.Seq, State: n.State, Reason: n.Reason,
		Dev: inof.Device{Addr: n.Target, Role: n.Role, Protocol: n.Protocol, Port: n.Port, NQN: n.NQN}, HadPrev: had}
	if had {
		rec.Prev = Notice0{State: prev.State, Dev: prev.Dev}
	}
	byTarget[n.Target] = rec
	r.inbox = append(r.inbox, rec)
}

// Clear forgets what host was told (the host dropped its state: its link
// went down, it said goodbye).
func (r *Recorder) Clear(host netip.Addr) {
	r.mu.Lock()
	delete(r.last, host)
	r.mu.Unlock()
}

// Last returns the last notification host received about target.
func (r *Recorder) Last(host, target netip.Addr) (Notice, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.last[host][target]
	return n, ok
}

// Drain returns what was recorded since the last Drain.
func (r *Recorder) Drain() []Notice {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.inbox
	r.inbox = nil
	return out
}

// Counts returns the retransmissions seen and the notifications for an
// address a probe had given up.
func (r *Recorder) Counts() (retransmits, stale int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.retransmits, r.stale
}

// reasons is a set of inof.Reason.
type reasons uint16

func (s reasons) has(r inof.Reason) bool { return s&(1<<r) != 0 }
func (s *reasons) add(r inof.Reason)     { *s |= 1 << r }

// stepLog is what happened during one step that may explain notifications.
type stepLog struct {
	n         int
	configs   []*zones.Config        // in force (or candidates) during the step
	causes    map[netip.Addr]reasons // target address: reasons its loss may carry
	reset     map[netip.Addr]bool    // host addresses whose view starts afresh
	restarted map[string]bool        // switch agents restarted (they replay saved state)
	moved     map[netip.Addr]bool    // addresses of devices whose zones may have changed
	spont     map[string]bool        // switches a reflector lost on its own (BFD)
}

func newStepLog(n int, cfg *zones.Config) *stepLog {
	return &stepLog{n: n, configs: []*zones.Config{cfg}, causes: map[netip.Addr]reasons{},
		reset: map[netip.Addr]bool{}, restarted: map[string]bool{}, moved: map[netip.Addr]bool{}, spont: map[string]bool{}}
}

// History keeps the logs of the current and the previous step: a
// notification is judged against both (it may be the late effect of a
// fault of the step before).
type History struct {
	mu        sync.Mutex
	cur, prev *stepLog
	// ever are all reasons each target address's loss could carry, over
	// the whole run (a restarted switch may replay old state).
	ever map[netip.Addr]reasons
}

// NewHistory starts at step 0 under cfg.
func NewHistory(cfg *zones.Config) *History {
	return &History{cur: newStepLog(0, cfg), ever: map[netip.Addr]reasons{}}
}

// Begin starts step n under configuration cfg.
func (h *History) Begin(n int, cfg *zones.Config) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.prev, h.cur = h.cur, newStepLog(n, cfg)
}

// Config records a configuration in force (or possible) during the step.
func (h *History) Config(c *zones.Config) {
	h.mu.Lock()
	h.cur.configs = append(h.cur.configs, c)
	h.mu.Unlock()
}

// Cause records that target address a may be lost with reason r.
func (h *History) Cause(a netip.Addr, r inof.Reason) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.cur.causes[a]
	c.add(r)
	h.cur.causes[a] = c
	e := h.ever[a]
	e.add(r)
	h.ever[a] = e
}

// Reset records that host address a starts afresh (it re-registered or
// returned): the agent may tell it again what it was told before.
func (h *History) Reset(a netip.Addr) {
	h.mu.Lock()
	h.cur.reset[a] = true
	h.mu.Unlock()
}

// Restarted records that switch s's agent restarted.
func (h *History) Restarted(s string) {
	h.mu.Lock()
	h.cur.restarted[s] = true
	h.mu.Unlock()
}

// Moved records that the device at address a changed (its address), so
// zone changes may be reported for it.
func (h *History) Moved(a netip.Addr) {
	h.mu.Lock()
	h.cur.moved[a] = true
	h.mu.Unlock()
}

// Spontaneous records that a reflector dropped switch s by itself (BFD),
// which the harness did not cause.
func (h *History) Spontaneous(s string) {
	h.mu.Lock()
	h.cur.spont[s] = true
	h.mu.Unlock()
}

func (h *History) logs() []*stepLog {
	if h.prev == nil {
		return []*stepLog{h.cur}
	}
	return []*stepLog{h.prev, h.cur}
}

// Finding is one thing the checker found wrong.
type Finding struct {
	Kind   string // divergence, lost, duplicate, unexpected-reason, leak
	Detail string
}

// Judge checks the notifications received during the window against the
// model and the history: cross-zone leaks, unexpected reasons, duplicates.
func (h *History) Judge(m *Model, ns []Notice) []Finding {
	h.mu.Lock()
	defer h.mu.Unlock()
	logs := h.logs()
	var out []Finding
	for _, n := range ns {
		host, hok := m.ByAddr(n.Host)
		tgt, tok := m.ByAddr(n.Target)
		switch {
		case !hok || !host.Role.IsHost():
			out = append(out, Finding{"leak", fmt.Sprintf("%s: notification to an address that is no host", n)})
			continue
		case !tok || !tgt.Role.IsTarget():
			out = append(out, Finding{"leak", fmt.Sprintf("%s: notification about an address that is no target", n)})
			continue
		}
		if !h.mayHaveSeen(logs, host.DeviceAt(n.Host), tgt.DeviceAt(n.Target)) {
			out = append(out, Finding{"leak", fmt.Sprintf("%s: %s may never see %s under any zoning of the window",
				n, host.ID(), tgt.ID())})
		}
		if n.State == inof.StateInactive && !h.explains(logs, host, tgt, n) {
			out = append(out, Finding{"unexpected-reason", fmt.Sprintf("%s: nothing in steps %s explains reason %s",
				n, stepRange(logs), n.Reason)})
		}
		if n.HadPrev && n.Prev.State == n.State && (n.State == inof.StateInactive || n.Prev.Dev == n.Dev) && !h.wasReset(logs, host, n.Host) {
			out = append(out, Finding{"duplicate", fmt.Sprintf("%s: told %s again with nothing in between", n, n.State)})
		}
	}
	return out
}

func stepRange(logs []*stepLog) string {
	if len(logs) == 1 {
		return fmt.Sprint(logs[0].n)
	}
	return fmt.Sprintf("%d-%d", logs[0].n, logs[len(logs)-1].n)
}

// mayHaveSeen: under some configuration of the window the host may see the
// target.
func (h *History) mayHaveSeen(logs []*stepLog, host, tgt inof.Device) bool {
	for _, l := range logs {
		for _, c := range l.configs {
			if zones.Visible(c, host, tgt) {
				return true
			}
		}
	}
	return false
}

// explains: some fault of the window accounts for an inactive notification
// with n's reason.
func (h *History) explains(logs []*stepLog, host, tgt *NIC, n Notice) bool {
	for _, l := range logs {
		if l.causes[n.Target].has(n.Reason) {
			return true
		}
		if (n.Reason == inof.ReasonBFDDown) && (l.spont[tgt.Switch]) {
			return true
		}
		if l.restarted[host.Switch] && (h.ever[n.Target].has(n.Reason) || n.Reason == inof.ReasonZoneChange || n.Reason == inof.ReasonBFDDown) {
			return true // a restarted agent replays what it saved; gone records read as 7
		}
		if n.Reason == inof.ReasonZoneChange && (l.moved[n.Host] || l.moved[n.Target] || h.zoningChanged(logs, host.DeviceAt(n.Host), tgt.DeviceAt(n.Target))) {
			return true
		}
	}
	return false
}

// zoningChanged: the configurations of the window do not all agree on
// whether host sees tgt.
func (h *History) zoningChanged(logs []*stepLog, host, tgt inof.Device) bool {
	first, set := false, false
	for _, l := range logs {
		for _, c := range l.configs {
			v := zones.Visible(c, host, tgt)
			if !set {
				first, set = v, true
			} else if v != first {
				return true
			}
		}
	}
	return false
}

func (h *History) wasReset(logs []*stepLog, host *NIC, a netip.Addr) bool {
	for _, l := range logs {
		if l.reset[a] || l.restarted[host.Switch] {
			return true
		}
	}
	return false
}

// Divergence is a host and target the oracle and the probe disagree on.
type Divergence struct {
	Host, Target *NIC
	Addr         netip.Addr // the target's address concerned
	Want         Verdict
	Last         *Notice // nil: never told anything (since its view was cleared)
	Lost         bool    // the host never heard the change it needed
}

func (d Divergence) String() string {
	last := "nothing"
	if d.Last != nil {
		last = d.Last.String()
	}
	kind := "wrong"
	if d.Lost {
		kind = "lost"
	}
	return fmt.Sprintf("%s host %s (%s) target %s (%s): want %s, last told %s", kind, d.Host.ID(), d.Host.Addr,
		d.Target.ID(), d.Addr, d.Want, last)
}

// Diverged compares every checkable host with the oracle. since is when
// the truth last changed: a host whose last notification is older than
// that and says the old state never heard the change (lost).
func Diverged(m *Model, r *Recorder, since time.Time) []Divergence {
	var out []Divergence
	for _, h := range m.Hosts() {
		if !m.Checkable(h) {
			continue
		}
		for _, t := range m.Targets() {
			for _, a := range t.Pool {
				want := m.Expect(h, t, a)
				if want == Unknown {
					continue
				}
				last, ok := r.Last(h.Addr, a)
				got := Inactive
				if ok && last.State == inof.StateActive {
					got = Active
					if want == Active && last.Dev != t.DeviceAt(a) {
						got = Unknown // told active with other attributes: wrong
					}
				}
				if got == want {
					continue
				}
				d := Divergence{Host: h, Target: t, Addr: a, Want: want}
				if ok {
					d.Last = &last
				}
				d.Lost = !ok || last.At.Before(since)
				out = append(out, d)
			}
		}
	}
	return out
}

// Summary renders divergences one a line.
func Summary(ds []Divergence) string {
	lines := make([]string, 0, len(ds))
	for _, d := range ds {
		lines = append(lines, d.String())
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
