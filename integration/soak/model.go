package soak

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// NIC is a probe NIC's ground truth: what the harness made it do.
type NIC struct {
	*NICSpec
	Addr netip.Addr // the address it registers now
	// Registered: the probe sends its registration (it may still be
	// waiting for its link). An aged-out or departed NIC is not.
	Registered bool
	LinkUp     bool
}

// Up reports whether the NIC is registered with its link up.
func (n *NIC) Up() bool { return n.Registered && n.LinkUp }

// DeviceAt is the NIC as the fabric knows it at address a.
func (n *NIC) DeviceAt(a netip.Addr) inof.Device {
	return inof.Device{Addr: a, Role: n.Role, Protocol: n.Protocol, Port: n.Port, NQN: n.NQN}
}

// Switch is a leaf's ground truth.
type Switch struct {
	Name    string
	Running bool
	// Graceful: stopped with SIGTERM; the reflectors keep its records
	// (graceful restart) until it comes back.
	Graceful bool
	UplinkUp bool
	Impaired bool
	// Blocked are the reflectors whose BGP path to this switch is cut
	// (BFD still passes), with when the cut began.
	Blocked map[string]time.Time
	// cfgSeen is the newest configuration generation the switch could have
	// received: one a reflector it had a working path to held.
	cfgSeen int
}

// Reflector is a reflector's ground truth.
type Reflector struct {
	Name     string
	Running  bool
	UplinkUp bool
	Impaired bool
	// ClockOffset is how far its clock is stepped (0: right).
	ClockOffset time.Duration
	DiskFull    bool // its store's file system is full
	// AheadUntil is when the other reflectors take its writes again: an
	// edit made while its clock was ahead carries a generation more than
	// inof.MaxGenerationSkew ahead of theirs, and so does every later one
	// (its generation clock never goes back), until their clocks catch up.
	AheadUntil time.Time
	// cfgHeld is the newest configuration generation the reflector holds:
	// the one edited on it, or received from the other reflector.
	cfgHeld int
}

// Verdict is what the oracle says a host must have been told last about a
// target.
type Verdict uint8

// Verdicts.
const (
	Unknown  Verdict = iota // no path the oracle can reason about: not checked
	Active                  // usable: the last notification must be active
	Inactive                // not usable: none, or the last one inactive
)

func (v Verdict) String() string {
	switch v {
	case Active:
		return "active"
	case Inactive:
		return "inactive"
	}
	return "unknown"
}

// Model is the ground truth of the fabric: which devices are up, where,
// with which address, which daemons and links work, and the zoning in
// force. The oracle (Expect) applies the zone rules to it.
type Model struct {
	Layout     *Layout
	NICs       []*NIC
	Switches   map[string]*Switch
	Reflectors map[string]*Reflector
	// Config is the zoning in force. Candidates, when set, are the
	// configurations concurrent edits may have settled on until the
	// harness read back which one the reflectors agree on.
	Config     *zones.Config
	Candidates []*zones.Config
	cfgGen     int
	// split: the last concurrent edits were both taken while the
	// reflectors did not reach each other (or were cut apart before they
	// could exchange them): each holds its own edit's result alone, none
	// the candidates, until replication resumes (Touch).
	split bool
	// apart: the reflectors did not reach each other at the last Touch;
	// rejoined is when they last came to reach each other again.
	apart    bool
	rejoined time.Time
	// wroteAt is when the last edit was taken, wroteOn on which
	// reflectors, wroteGen the configuration generation it made.
	wroteAt  time.Time
	wroteOn  []string
	wroteGen int
	// Clock, if set, replaces time.Now (unit tests).
	Clock func() time.Time

	byAddr map[netip.Addr]*NIC
}

// NewModel returns the model of a layout just started: every daemon and
// link up, the NICs registered unless the layout says otherwise, and a new
// fabric's zoning (no zones yet: the layout's are edits to make).
func NewModel(l *Layout) *Model {
	m := &Model{Layout: l, Switches: map[string]*Switch{}, Reflectors: map[string]*Reflector{},
		Config: zones.NewConfig(zones.DefaultSettings()), byAddr: map[netip.Addr]*NIC{}}
	for _, s := range l.NICs {
		n := &NIC{NICSpec: s, Addr: s.Pool[0], Registered: !s.Unregistered, LinkUp: true}
		m.NICs = append(m.NICs, n)
		for _, a := range s.Pool {
			m.byAddr[a] = n
		}
	}
	for _, s := range l.Switches {
		m.Switches[s] = &Switch{Name: s, Running: true, UplinkUp: true, Blocked: map[string]time.Time{}}
	}
	for _, r := range l.Reflectors {
		m.Reflectors[r] = &Reflector{Name: r, Running: true, UplinkUp: true}
	}
	return m
}

// ByAddr returns the NIC that may take address a.
func (m *Model) ByAddr(a netip.Addr) (*NIC, bool) {
	n, ok := m.byAddr[a]
	return n, ok
}

// SetConfig makes c the zoning in force, held by the reflectors at (it was
// edited there, or read back from them; none: every reflector).
func (m *Model) SetConfig(c *zones.Config, at ...string) { m.install(c, false, at...) }

// install is SetConfig, split saying whether the reflectors hold each
// only its own part of it (ConcurrentlyEdited).
func (m *Model) install(c *zones.Config, split bool, at ...string) {
	m.Config, m.Candidates, m.split = c, nil, split
	m.cfgGen++
	for name, r := range m.Reflectors {
		if len(at) == 0 || slices.Contains(at, name) {
			r.cfgHeld = m.cfgGen
		}
	}
	m.Touch()
}

// Possible returns every configuration the reflectors may hold: the one
// in force and, while concurrent edits are unresolved, the other
// candidates.
func (m *Model) Possible() []*zones.Config {
	return append([]*zones.Config{m.Config}, m.Candidates...)
}

// setPossible makes cs[0] the zoning in force, held at (as install),
// and the others its candidates until read back.
func (m *Model) setPossible(cs []*zones.Config, split bool, at ...string) {
	m.install(cs[0], split, at...)
	if len(cs) > 1 {
		m.Candidates = cs[1:]
	}
}

// Edited follows edit e, taken by reflector name: it landed on whichever
// possible configuration the reflector held (one it applies to). It
// returns the configurations possible now, the first in force; none, the
// model left as it was, if no configuration the reflectors may hold takes
// e.
func (m *Model) Edited(name string, e Edit) []*zones.Config {
	after := AfterEdit(m.Possible(), e, true)
	if len(after) == 0 {
		return nil
	}
	m.Wrote(name)
	m.setPossible(after, false, name)
	m.taken(name)
	return after
}

// taken notes an edit just taken on the reflectors names, which hold the
// zoning in force it made (Touch: a cut right after it may keep it from
// the others).
func (m *Model) taken(names ...string) {
	m.wroteAt, m.wroteOn, m.wroteGen = m.now(), names, m.cfgGen
}

// ConcurrentlyEdited follows edits a and b committed at the same moment on
// the two reflectors (a on the first of the layout's, b on the second),
// ok saying which were taken. Every configuration they may leave from any
// the reflectors may hold (Candidates of Possible, not of the zoning in
// force alone: earlier concurrent edits may be unresolved) is possible
// until read back. It returns those, and the configurations the fabric
// may pass on the way (Passing); none, the model left as it was, if no
// configuration explains the outcome.
//
// Where the reflectors hold the candidates depends on whether they reach
// each other: if they do, both adopt the other's edit at once; if not,
// an edit taken alone is held by its reflector only, and two taken are
// held each by its own reflector alone (split: the candidates exist only
// once they exchange; Passing explains what the switches are told
// meanwhile). Seed 8370634194321728583 step 76: rr1's uplink was down
// when the pair was taken, and the next edit on rr2, drawn from the
// candidates, met rr2's half and was refused.
func (m *Model) ConcurrentlyEdited(a, b Edit, aOK, bOK bool) (cands, passing []*zones.Config) {
	poss := m.Possible()
	cands = Candidates(poss, a, b, aOK, bOK)
	if len(cands) == 0 {
		return nil, nil
	}
	var took []string
	for i, ok := range []bool{aOK, bOK} {
		if ok {
			took = append(took, m.Layout.Reflectors[i])
		}
	}
	m.Touch()
	switch {
	case len(took) == 0 || m.replicating():
		m.setPossible(cands, false)
	case len(took) == 1:
		m.setPossible(cands, false, took...)
	default:
		m.setPossible(cands, true)
	}
	if len(took) > 0 {
		m.taken(took...)
	}
	return cands, Passing(poss, a, b, aOK, bOK)
}

// ReplicationWait is how long after its clock catches up a reflector takes
// a version it refused as too far ahead: the replicator looks at refused
// versions again every 10 s (bgp.ReplicatorOptions.RetryEvery), plus a
// margin.
const ReplicationWait = 20 * time.Second

// Wrote records an edit made on reflector name: one made while its clock
// is ahead by more than inof.MaxGenerationSkew is refused by the other
// reflectors until their clocks reach its generation.
func (m *Model) Wrote(name string) {
	r := m.Reflectors[name]
	if skew := r.ClockOffset - inof.MaxGenerationSkew; skew > 0 {
		r.AheadUntil = later(r.AheadUntil, m.now().Add(skew+ReplicationWait))
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Lags reports whether reflector name may not hold the zoning in force
// yet: it refuses another reflector's edits as too far ahead.
func (m *Model) Lags(name string) bool {
	_, ok := m.aheadOf(name)
	return ok
}

// aheadOf returns the reflector other than name whose edits the others
// refuse as too far ahead now, if any.
func (m *Model) aheadOf(name string) (*Reflector, bool) {
	for other, r := range m.Reflectors {
		if other != name && m.now().Before(r.AheadUntil) {
			return r, true
		}
	}
	return nil, false
}

// EditHeldBack says why the harness must not edit on reflector name now,
// or "" if it may. The reflectors order the versions of an object by
// generation (the last writer wins), so an edit made where the newest
// zoning has not arrived yet (the reflector that has it is cut off, or
// its generations are refused as too far ahead) or while another
// reflector's clock is stepped can lose to an older one made elsewhere, or
// overrule it, by clocks the model cannot follow. Concurrent edits are the
// one race the model does follow (Candidates).
//
// A reflector may also lack the other's edit when the path between them
// was cut since (or right after) it was taken: an uplink down or lossy, a
// reflector stopped; then until replication resumes (ReplicationResume
// after they reach each other again). The model holds such edits back up
// front rather than excusing their refusals afterwards: an edit the
// lagging reflector takes lands on a zoning the model does not hold and
// overrules the other's version, by generation, when they meet, which no
// refusal rule could follow (seed 8370634194321728583 step 76).
func (m *Model) EditHeldBack(name string) string {
	m.Touch() // a replication window may have ended since the last change
	if m.split {
		return "the reflectors hold each its own of the concurrent edits until they exchange them (they did not reach each other)"
	}
	if m.Reflectors[name].cfgHeld != m.cfgGen {
		if r, ok := m.aheadOf(name); ok {
			return fmt.Sprintf("it refuses the edits of %s as too far ahead until about %s", r.Name, r.AheadUntil.Format("15:04:05"))
		}
		return "it does not hold the zoning in force yet (the reflector edited last has not reached it, or not long enough for replication)"
	}
	for other, r := range m.Reflectors {
		if other != name && r.ClockOffset != 0 {
			return fmt.Sprintf("the clock of %s is stepped %s", other, r.ClockOffset)
		}
	}
	return ""
}

// ReadBack records that the reflectors read hold the zoning in force (a
// read back found them agreeing on it): they need no replication for it,
// and concurrent edits they hold each its own of are merged if every
// reflector was read.
func (m *Model) ReadBack(read ...string) {
	for _, name := range read {
		m.Reflectors[name].cfgHeld = m.cfgGen
	}
	if len(read) == len(m.Reflectors) {
		m.split = false
	}
	m.Touch()
}

// Unmerged reports whether the reflectors hold each only its own of the
// last concurrent edits (taken while they did not reach each other): a
// zoning read back from one of them alone resolves nothing.
func (m *Model) Unmerged() bool { return m.split }

// ReplicationLag is how long after a commit the other reflector may
// still lack it although they reach each other: the records' way through
// BGP to it and into its store, on a loaded machine. A cut within it
// keeps the edit from the other until they meet again.
const ReplicationLag = time.Second

// ReplicationResume is how long after the reflectors reach each other
// again (an uplink back, loss removed, a reflector started) what either
// took meanwhile may take to reach the other: the session between them
// recovers (TCP's retransmission after the cut, or, if it ended, GoBGP's
// idle hold and reconnect) and the versions are exchanged. The hold time
// is 9 s; HoldExpiry's margin covers the rest.
const ReplicationResume = HoldExpiry

// RefusalFair says why a refusal of edit e, drawn from the zoning in
// force and made on reflector name, changed nothing and is no finding, or
// "" if the model cannot explain it: a full store or a stepped clock, or,
// while concurrent edits are unresolved, a candidate e does not apply to
// (the reflector may hold it). A reflector that may lag behind the zoning
// in force is not edited at all (EditHeldBack), so a lag explains no
// refusal here.
func (m *Model) RefusalFair(name string, e Edit) string {
	r := m.Reflectors[name]
	switch {
	case r.DiskFull || r.ClockOffset != 0:
		return "store full or clock stepped"
	case m.Candidates != nil && len(AfterEdit(m.Possible(), e, false)) > 0:
		return "it does not apply to every candidate of the concurrent edits"
	}
	return ""
}

// Touch must follow every change of the model: reflectors that reach each
// other share the configuration in force (replication), and switches with
// a working path to a reflector holding it are taken to have it. An edit
// on a reflector cut off from the fabric reaches nobody until it is back
// (and replication resumed: ReplicationResume), one taken just before
// the cut (ReplicationLag) may not have reached the other reflector, and
// one whose generation is too far ahead for the other reflectors reaches
// them only once their clocks catch up (Wrote); switches take it from it
// alone meanwhile.
func (m *Model) Touch() {
	now := m.now()
	switch connected := m.peersConnected(); {
	case !connected && !m.apart:
		m.apart = true
		m.cutAfterWrite(now)
	case connected && m.apart:
		m.apart, m.rejoined = false, now
	}
	if m.replicating() {
		held := 0
		for _, r := range m.Reflectors {
			held = max(held, r.cfgHeld)
		}
		for _, r := range m.Reflectors {
			r.cfgHeld = held
		}
		m.split = false
	}
	if m.split {
		return // no reflector holds the candidates yet
	}
	for _, s := range m.Switches {
		for name, r := range m.Reflectors {
			if r.cfgHeld == m.cfgGen && m.path(name, s.Name) == pathUp {
				s.cfgSeen = m.cfgGen
			}
		}
	}
}

// cutAfterWrite follows the reflectors losing each other at now: an edit
// taken less than ReplicationLag before, and still the zoning in force,
// may be held only where it was taken, and by no switch yet but those
// that reach that reflector (Touch raises them again; not the newest is
// all cfgHeld and cfgSeen say, Touch brings them back).
func (m *Model) cutAfterWrite(now time.Time) {
	if m.wroteGen != m.cfgGen || len(m.wroteOn) == 0 || now.Sub(m.wroteAt) >= ReplicationLag {
		return
	}
	for _, s := range m.Switches {
		if s.cfgSeen == m.cfgGen {
			s.cfgSeen = m.cfgGen - 1
		}
	}
	if len(m.wroteOn) > 1 {
		m.split = true // concurrent edits, both taken
		return
	}
	for name, r := range m.Reflectors {
		if !slices.Contains(m.wroteOn, name) && r.cfgHeld == m.cfgGen {
			r.cfgHeld = m.cfgGen - 1
		}
	}
}

// replicating reports whether the reflectors exchange their edits now:
// they reach each other, have for ReplicationResume, and take each
// other's generations.
func (m *Model) replicating() bool {
	return !m.apart && m.peersConnected() && !m.anyAhead() && !m.now().Before(m.rejoined.Add(ReplicationResume))
}

// AheadEnded reports whether a reflector's writes are taken again after
// being refused as too far ahead: the reflectors must be read back
// agreeing.
func (m *Model) AheadEnded() bool {
	for _, r := range m.Reflectors {
		if !r.AheadUntil.IsZero() && !m.now().Before(r.AheadUntil) {
			return true
		}
	}
	return false
}

// ForgetAhead drops the windows that AheadEnded reported, once the
// reflectors were read back agreeing.
func (m *Model) ForgetAhead() {
	for _, r := range m.Reflectors {
		if !m.now().Before(r.AheadUntil) {
			r.AheadUntil = time.Time{}
		}
	}
}

// anyAhead reports whether some reflector's writes are refused now.
func (m *Model) anyAhead() bool {
	_, ok := m.aheadOf("")
	return ok
}

// peersConnected reports whether the reflectors reach each other: all
// running, their uplinks up and working.
func (m *Model) peersConnected() bool {
	for _, r := range m.Reflectors {
		if !r.Running || !r.UplinkUp || r.Impaired {
			return false
		}
	}
	return true
}

// pathState is what one reflector-switch path does.
type pathState uint8

const (
	pathUp      pathState = iota // session and BFD work
	pathDown                     // detected as gone (process, link): both ends act on it
	pathStale                    // gone, but the reflector keeps the switch's records (graceful restart)
	pathUnclear                  // cut without BFD noticing, or lossy: either may happen
)

// HoldExpiry is how long after its BGP path is cut a session is surely
// over (hold time 9 s, plus a margin).
const HoldExpiry = 12 * time.Second

// path says what the session between reflector r and switch s does at
// the model's clock.
func (m *Model) path(r, s string) pathState {
	rr, sw := m.Reflectors[r], m.Switches[s]
	cut, blocked := sw.Blocked[r]
	switch {
	case !sw.Running && sw.Graceful && rr.Running && rr.UplinkUp:
		return pathStale
	case !rr.Running || !sw.Running || !rr.UplinkUp || !sw.UplinkUp:
		return pathDown
	case sw.Impaired || rr.Impaired:
		return pathUnclear
	case blocked && m.now().Sub(cut) < HoldExpiry:
		return pathUnclear
	case blocked:
		return pathStale // the hold time ran out, BFD still up: the reflector may keep the records
	}
	return pathUp
}

// now is the model's clock (the wall clock unless a test sets Clock).
func (m *Model) now() time.Time {
	if m.Clock != nil {
		return m.Clock()
	}
	return time.Now()
}

// Checkable reports whether host NIC h can be held to the oracle now: a
// host, registered, its link up and its switch agent running.
func (m *Model) Checkable(h *NIC) bool {
	return h.Role.IsHost() && h.Up() && m.Switches[h.Switch].Running
}

// Expect is the oracle: what host NIC h (at its current address) must have
// been told last about target NIC t at address a (its current one, or one
// it had). Unknown when the fabric may legitimately still hold stale state:
// no working path between the switches, or a configuration the host's
// switch could not have received.
func (m *Model) Expect(h, t *NIC, a netip.Addr) Verdict {
	if !t.Role.IsTarget() || a == h.Addr {
		return Unknown
	}
	hs := h.Switch
	up := t.Up() && a == t.Addr && m.Switches[t.Switch].Running
	visible, sure := m.visible(h.DeviceAt(h.Addr), t.DeviceAt(a))
	if !sure {
		return Unknown
	}
	if m.Switches[hs].cfgSeen != m.cfgGen {
		return Unknown // the switch may not have the configuration in force
	}
	if t.Switch == hs {
		return verdict(up && visible)
	}
	// A remote target: what the reflectors serving h's switch say of t's.
	// A fresh copy must win over a stale one: a reflector that lost the
	// switch's session without BFD noticing must not shadow another
	// reflector that still hears it.
	fresh, gone, stale, unclear := false, false, false, false
	for r := range m.Reflectors {
		if m.path(r, hs) != pathUp {
			continue
		}
		switch m.path(r, t.Switch) {
		case pathUp:
			fresh = true
		case pathDown:
			gone = true
		case pathStale:
			stale = true
		default:
			unclear = true
		}
	}
	switch {
	case unclear:
		return Unknown
	case fresh:
		return verdict(up && visible)
	case gone && !stale:
		return Inactive // the reflectors withdrew t's switch
	}
	return Unknown
}

// visible applies the zone rules under the configuration in force, or
// under every candidate; sure is false when candidates disagree.
func (m *Model) visible(h, t inof.Device) (visible, sure bool) {
	visible = zones.Visible(m.Config, h, t)
	for _, c := range m.Candidates {
		if zones.Visible(c, h, t) != visible {
			return false, false
		}
	}
	return visible, true
}

func verdict(active bool) Verdict {
	if active {
		return Active
	}
	return Inactive
}

// Hosts returns the host NICs, in layout order.
func (m *Model) Hosts() []*NIC {
	return slices.DeleteFunc(slices.Clone(m.NICs), func(n *NIC) bool { return !n.Role.IsHost() })
}

// Targets returns the target NICs, in layout order.
func (m *Model) Targets() []*NIC {
	return slices.DeleteFunc(slices.Clone(m.NICs), func(n *NIC) bool { return !n.Role.IsTarget() })
}

// NICsOn returns the NICs cabled to switch s.
func (m *Model) NICsOn(s string) []*NIC {
	return slices.DeleteFunc(slices.Clone(m.NICs), func(n *NIC) bool { return n.Switch != s })
}

// Healthy reports whether every daemon runs and every path works (the
// state every step returns to).
func (m *Model) Healthy() bool {
	for r := range m.Reflectors {
		for s := range m.Switches {
			if m.path(r, s) != pathUp {
				return false
			}
		}
	}
	return true
}
