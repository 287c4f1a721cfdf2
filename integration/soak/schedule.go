package soak

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Kind is a kind of fault.
type Kind uint8

// Fault kinds. The first ones are transient: they are healed within the
// step that injected them; the others change the ground truth for good.
const (
	KillReflector   Kind = iota + 1 // SIGKILL a reflector, start it again
	TermReflector                   // SIGTERM a reflector (clean stop), start it again
	BothReflectors                  // both reflectors down together, then back
	KillSwitch                      // SIGKILL a switch agent, start it again
	TermSwitch                      // SIGTERM a switch agent, start it again
	AccessFlap                      // a device NIC's access port loses carrier, then gets it back
	UplinkFlap                      // a reflector's or switch's uplink down, then up
	Partition                       // the BGP path of a leaf to one reflector cut (BFD passes), then restored
	Impair                          // loss and delay on an uplink, then removed
	ClockStep                       // a reflector's clock stepped ±10 min, then stepped back
	DiskFull                        // a reflector's store file system filled up, then freed
	KillAfterFlap                   // every reflector drops BFD for a moment (a false down of every switch), then a switch is SIGKILLed 0–4 s later and started again
	CPUHog                          // every core kept busy (stress-ng) for the step's hold, then freed
	ZoneEdit                        // one zone edit on either reflector
	ConcurrentEdits                 // one edit on each reflector at the same moment
	HardZoning                      // hard zoning or the default zone toggled
	AliasChange                     // an alias created, changed or deleted
	Registration                    // a NIC registers, or says goodbye (TTL 0)
	AddressChange                   // a NIC registers another address
	AgeOut                          // a NIC stops sending LLDP: its registration ages out
	numKinds
)

var kindNames = [...]string{
	KillReflector: "kill-reflector", TermReflector: "term-reflector", BothReflectors: "both-reflectors",
	KillSwitch: "kill-switch", TermSwitch: "term-switch", AccessFlap: "access-flap", UplinkFlap: "uplink-flap",
	Partition: "bgp-partition", Impair: "loss-delay", ClockStep: "clock-step", DiskFull: "disk-full",
	ZoneEdit: "zone-edit", ConcurrentEdits: "concurrent-edits", HardZoning: "zoning-settings",
	AliasChange: "alias-change", Registration: "register-goodbye", AddressChange: "address-change", AgeOut: "age-out",
	KillAfterFlap: "kill-after-flap", CPUHog: "cpu-hog",
}

func (k Kind) String() string {
	if k > 0 && k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// settlesSlowly reports whether a fault makes its step wait for the
// fabric's settle times: a restart, or sessions that go down and come back
// (graceful restart's 10 s settle).
func (k Kind) settlesSlowly() bool {
	switch k {
	case KillReflector, TermReflector, BothReflectors, KillSwitch, TermSwitch, UplinkFlap, Partition, KillAfterFlap:
		return true
	}
	return false
}

// riders is how many faults that settle fast a step with one that settles
// slowly takes beyond its drawn count.
const riders = 3

// Transient reports whether the fault is healed within its step.
func (k Kind) Transient() bool { return k >= KillReflector && k <= CPUHog }

// Kinds lists every fault kind.
func Kinds() []Kind {
	out := make([]Kind, 0, numKinds-1)
	for k := KillReflector; k < numKinds; k++ {
		out = append(out, k)
	}
	return out
}

// KindsWithout lists every fault kind but those named in skip (comma
// separated, as Kind.String spells them).
func KindsWithout(skip string) ([]Kind, error) {
	drop := map[Kind]bool{}
	for _, name := range strings.Split(skip, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		k := slices.IndexFunc(Kinds(), func(k Kind) bool { return k.String() == name })
		if k < 0 {
			return nil, fmt.Errorf("no fault kind %q", name)
		}
		drop[Kinds()[k]] = true
	}
	return slices.DeleteFunc(Kinds(), func(k Kind) bool { return drop[k] }), nil
}

// weights say how often each kind is drawn: restarts cost a settle time
// each (10 s), so they come less often than flaps and edits; a clock
// stepped ahead keeps the other reflector from being edited for 5 minutes
// (Model.EditHeldBack), so it comes least often.
var weights = map[Kind]int{
	KillReflector: 4, TermReflector: 3, BothReflectors: 2, KillSwitch: 4, TermSwitch: 3,
	AccessFlap: 10, UplinkFlap: 5, Partition: 4, Impair: 4, ClockStep: 1, DiskFull: 2, KillAfterFlap: 3, CPUHog: 2,
	ZoneEdit: 10, ConcurrentEdits: 4, HardZoning: 3, AliasChange: 5,
	Registration: 8, AddressChange: 5, AgeOut: 4,
}

// Fault is one fault of a step, as drawn: the pieces that depend on the
// fabric's state (which edit, which address) are resolved from Pick when
// the fault is applied, so a schedule depends on its seed alone.
type Fault struct {
	Kind Kind
	Node string // the reflector or switch; Partition: the switch
	Peer string // Partition: the reflector
	NIC  int    // index into Layout.NICs (AccessFlap, Registration, AddressChange, AgeOut)
	Pick uint64 // resolves edits and addresses
	Hard bool   // BothReflectors: SIGKILL rather than SIGTERM
	Sign int    // ClockStep: +1 ahead, -1 behind
	Loss float64
	// Delay: Impair, the added delay; KillAfterFlap, the wait from the
	// end of the false down to the kill.
	Delay time.Duration
	// After is the wait before the fault is injected, after the previous
	// fault of the step.
	After time.Duration
	// Edit, in scripted steps, is the zoning change of a ZoneEdit,
	// AliasChange or HardZoning instead of one drawn from Pick.
	Edit *Edit
}

func (f Fault) String(l *Layout) string {
	s := f.Kind.String()
	switch f.Kind {
	case Partition:
		s += " " + f.Node + "/" + f.Peer
	case AccessFlap, Registration, AddressChange, AgeOut:
		s += " " + l.NICs[f.NIC].ID()
	case Impair:
		s += fmt.Sprintf(" %s loss %.0f%% delay %s", f.Node, f.Loss*100, f.Delay)
	case KillAfterFlap:
		s += fmt.Sprintf(" %s %s after", f.Node, f.Delay.Round(time.Millisecond))
	case CPUHog:
	case ClockStep:
		s += fmt.Sprintf(" %s %+d min", f.Node, f.Sign*clockStepMinutes)
	case BothReflectors:
		if f.Hard {
			s += " SIGKILL"
		} else {
			s += " SIGTERM"
		}
	case ZoneEdit, ConcurrentEdits, HardZoning, AliasChange:
		if f.Node != "" {
			s += " on " + f.Node
		}
		if f.Edit != nil {
			s += ": " + f.Edit.String()
		} else {
			s += fmt.Sprintf(" #%d", f.Pick%1000)
		}
	default:
		s += " " + f.Node
	}
	if f.After > 0 {
		s += fmt.Sprintf(" (+%s)", f.After.Round(time.Millisecond))
	}
	return s
}

// clockStepMinutes is how far a ClockStep moves a reflector's clock.
const clockStepMinutes = 10

// Step is one round: faults injected one after the other, held, the
// transient ones healed in Heal order, then the oracle consulted.
type Step struct {
	N      int
	Faults []Fault
	// Hold is the time between the last injection and the first heal.
	Hold time.Duration
	// Heal lists the transient faults (indexes into Faults) in the order
	// they are healed, HealGap apart.
	Heal    []int
	HealGap time.Duration
	// MidCheck consults the oracle while the transient faults still hold.
	MidCheck bool
}

// Describe renders the step on one line.
func (s Step) Describe(l *Layout) string {
	parts := make([]string, len(s.Faults))
	for i, f := range s.Faults {
		parts[i] = f.String(l)
	}
	out := fmt.Sprintf("step %d: %s", s.N, strings.Join(parts, "; "))
	if len(s.Heal) > 0 {
		out += fmt.Sprintf("; hold %s", s.Hold.Round(time.Millisecond))
		if s.MidCheck {
			out += ", checked while held"
		}
	}
	return out
}

// Schedule draws steps from a seed.
type Schedule struct {
	rng    *rand.Rand
	layout *Layout
	kinds  []Kind // drawable kinds, each repeated by weight
	n      int
}

// NewSchedule returns the schedule of seed over layout, drawing from the
// given kinds (all when empty).
func NewSchedule(seed uint64, l *Layout, kinds ...Kind) *Schedule {
	if len(kinds) == 0 {
		kinds = Kinds()
	}
	s := &Schedule{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), layout: l}
	for _, k := range kinds {
		for range weights[k] {
			s.kinds = append(s.kinds, k)
		}
	}
	return s
}

// Next draws the next step.
func (s *Schedule) Next() Step {
	s.n++
	st := Step{N: s.n}
	// 2 to 6 faults, 4 on average: a step's settle (restarts, sessions
	// coming back: 11 s) costs more than its faults, so faults come in
	// combination.
	count := 2
	switch p := s.rng.IntN(100); {
	case p >= 85:
		count = 6
	case p >= 65:
		count = 5
	case p >= 35:
		count = 4
	case p >= 10:
		count = 3
	}
	var busy busySet
	for tries := 0; len(st.Faults) < count && tries < 50; tries++ {
		f := s.draw()
		if !busy.admit(s.layout, f) {
			continue
		}
		if len(st.Faults) > 0 {
			f.After = s.dur(0, 1500*time.Millisecond)
		}
		st.Faults = append(st.Faults, f)
		// A clock step or a full disk matters for what the reflector
		// writes: give it an edit on that reflector to take.
		if (f.Kind == ClockStep || f.Kind == DiskFull) && len(st.Faults) < 6 {
			e := Fault{Kind: ZoneEdit, Node: f.Node, Pick: s.rng.Uint64(), After: s.dur(100*time.Millisecond, time.Second)}
			if s.rng.IntN(3) == 0 {
				e.Kind = AliasChange
			}
			st.Faults = append(st.Faults, e)
		}
		// A partition matters when the partitioned leaf has news: give it
		// a target that changes, late enough for the session to expire.
		if f.Kind == Partition && s.rng.IntN(2) == 0 {
			if nic, ok := s.targetOn(f.Node, &busy); ok {
				st.Faults = append(st.Faults, Fault{Kind: AccessFlap, NIC: nic, After: s.dur(0, 12*time.Second)})
			}
		}
	}
	// A step that waits for sessions or a restart anyway (11 s and more)
	// takes riders: more faults of the other kinds, which settle within
	// that wait.
	if slices.ContainsFunc(st.Faults, func(f Fault) bool { return f.Kind.settlesSlowly() }) {
		for added, tries := 0, 0; added < riders && tries < 50; tries++ {
			f := s.draw()
			if f.Kind.settlesSlowly() || !busy.admit(s.layout, f) {
				continue
			}
			f.After = s.dur(0, time.Second)
			st.Faults = append(st.Faults, f)
			added++
		}
	}
	for i, f := range st.Faults {
		if f.Kind.Transient() || f.Kind == AccessFlap {
			st.Heal = append(st.Heal, i)
		}
	}
	if len(st.Heal) > 0 {
		st.Hold = s.dur(300*time.Millisecond, 4*time.Second)
		for _, f := range st.Faults {
			if f.Kind == Partition {
				st.Hold = max(st.Hold, s.dur(2*time.Second, 14*time.Second))
			}
		}
		s.rng.Shuffle(len(st.Heal), func(i, j int) { st.Heal[i], st.Heal[j] = st.Heal[j], st.Heal[i] })
		st.HealGap = s.dur(0, time.Second)
		st.MidCheck = s.rng.IntN(100) < 40
	}
	return st
}

// draw picks one fault with its parameters.
func (s *Schedule) draw() Fault {
	l := s.layout
	f := Fault{Kind: s.kinds[s.rng.IntN(len(s.kinds))], Pick: s.rng.Uint64()}
	pick := func(xs []string) string { return xs[s.rng.IntN(len(xs))] }
	switch f.Kind {
	case KillReflector, TermReflector, ClockStep, DiskFull, ZoneEdit, HardZoning, AliasChange:
		f.Node = pick(l.Reflectors)
	case KillSwitch, TermSwitch, KillAfterFlap:
		f.Node = pick(l.Switches)
	case UplinkFlap, Impair:
		f.Node = pick(append(slices.Clone(l.Reflectors), l.Switches...))
	case Partition:
		f.Node, f.Peer = pick(l.Switches), pick(l.Reflectors)
	case AccessFlap, Registration, AddressChange, AgeOut:
		f.NIC = s.rng.IntN(len(l.NICs))
	case BothReflectors:
		f.Hard = s.rng.IntN(2) == 0
	}
	switch f.Kind {
	case Impair:
		f.Loss = float64(s.rng.IntN(31)) / 100
		f.Delay = time.Duration(s.rng.IntN(201)) * time.Millisecond
	case KillAfterFlap:
		f.Delay = s.dur(0, 4*time.Second)
	case ClockStep:
		f.Sign = 1
		if s.rng.IntN(2) == 0 {
			f.Sign = -1
		}
	}
	return f
}

// targetOn picks a target NIC on switch sw that the step does not use yet.
func (s *Schedule) targetOn(sw string, busy *busySet) (int, bool) {
	var cands []int
	for i, n := range s.layout.NICs {
		// A NIC that is a host too is not touched while its switch
		// restarts (admit).
		if n.Switch == sw && n.Role.IsTarget() && !busy.nics[i] && !(n.Role.IsHost() && busy.restarting[sw]) {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return 0, false
	}
	i := cands[s.rng.IntN(len(cands))]
	busy.admit(s.layout, Fault{Kind: AccessFlap, NIC: i})
	return i, true
}

func (s *Schedule) dur(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)+1))
}

// busySet keeps a step's faults from contradicting each other.
type busySet struct {
	nodes      map[string]bool // a process, uplink, clock or store fault holds it
	nics       map[int]bool
	partition  bool
	flap, hog  bool            // a KillAfterFlap, a CPUHog taken
	hostSwitch map[string]bool // switches with a host NIC fault this step
	restarting map[string]bool // switches restarted this step
}

// admit reports whether f fits the step, and takes what it uses.
//
// A host NIC's own link, registration or address is never touched while
// its switch agent restarts in the same step: a host sends one zone query
// per registration and drops its controllers when its link goes down
// (nvme-snsd), so a switch agent that is down at that moment cannot learn
// either and the host is left with a view nobody can correct; that is a
// limit of the protocol, not something the fabric can converge from.
func (b *busySet) admit(l *Layout, f Fault) bool {
	if b.nodes == nil {
		b.nodes, b.nics, b.hostSwitch, b.restarting = map[string]bool{}, map[int]bool{}, map[string]bool{}, map[string]bool{}
	}
	switch f.Kind {
	case KillReflector, TermReflector, UplinkFlap, Impair, ClockStep, DiskFull, KillSwitch, TermSwitch, KillAfterFlap:
		restarts := f.Kind == KillSwitch || f.Kind == TermSwitch || f.Kind == KillAfterFlap
		if b.nodes[f.Node] || f.Kind == KillAfterFlap && b.flap {
			return false
		}
		if restarts && b.hostSwitch[f.Node] {
			return false
		}
		b.nodes[f.Node] = true
		b.flap = b.flap || f.Kind == KillAfterFlap
		if restarts {
			b.restarting[f.Node] = true
		}
	case CPUHog:
		if b.hog {
			return false
		}
		b.hog = true
	case BothReflectors:
		for _, r := range l.Reflectors {
			if b.nodes[r] {
				return false
			}
		}
		for _, r := range l.Reflectors {
			b.nodes[r] = true
		}
	case Partition:
		if b.partition {
			return false
		}
		b.partition = true
	case AccessFlap, Registration, AddressChange, AgeOut:
		n := l.NICs[f.NIC]
		if b.nics[f.NIC] {
			return false
		}
		if n.Role.IsHost() && f.Kind != AgeOut {
			if b.restarting[n.Switch] {
				return false
			}
			b.hostSwitch[n.Switch] = true
		}
		b.nics[f.NIC] = true
	}
	return true
}
