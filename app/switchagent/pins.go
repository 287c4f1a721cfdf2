package switchagent

import (
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/ratelimit"
	"github.com/openinof/inof/zones"
)

// Refusal is a device record whose claim to its NQN the pins of the zone
// configuration refuse (zones.Pin): a device on a switch port outside the
// NQN's pin, from this switch's registrations or from another switch's
// records alike. The engine keeps it out of every zone (no host is told
// about it, it sees nothing, its record carries no zone's route target);
// the agent counts, logs and reports it.
type Refusal struct {
	Record inof.Report
	Claim  zones.Claim
}

// pinJudge is the Engine's judgement of the merged records under the pins
// of the configuration in force: which record of an address to judge, and
// which addresses are refused, so that each refusal is reported once, when
// it begins.
type pinJudge struct {
	targets *Targets // the engine's
	// refused holds the addresses whose merged record claims a pinned NQN
	// on a switch port outside its pin: kept out of the index.
	refused map[netip.Addr]bool
}

func newPinJudge(targets *Targets) *pinJudge {
	return &pinJudge{targets: targets, refused: map[netip.Addr]bool{}}
}

// judge decides whether the merged record cur of addr is refused by the
// pins of cfg, the configuration in force, and notes in out a refusal that
// begins. A record that is not there, or whose NQN no pin names, is not
// refused.
func (p *pinJudge) judge(cfg *zones.Config, addr netip.Addr, cur inof.Report, present bool, out *Output) bool {
	refused := present && cfg.Refuses(cur)
	if !refused {
		delete(p.refused, addr)
		return false
	}
	if !p.refused[addr] {
		p.refused[addr] = true
		out.Refused = append(out.Refused, Refusal{Record: cur, Claim: cfg.Judge(cur.Device, cur.Switch, cur.AccessPort)})
	}
	return true
}

// allowed returns the record of addr to judge under cfg: cur, the
// preferred one, unless the pins refuse it while another switch's active
// record of the address is allowed (the real device, and a device claiming
// its NQN and its address on another port): then that one, so a claim from
// elsewhere cannot take the real device out of its zones.
func (p *pinJudge) allowed(cfg *zones.Config, addr netip.Addr, cur inof.Report, present bool) inof.Report {
	if !present || !cfg.Refuses(cur) {
		return cur
	}
	for _, r := range p.targets.Reports(addr) {
		if r.State == inof.StateActive && !cfg.Refuses(r) {
			return r
		}
	}
	return cur
}

// rejudge judges again, under the configuration just put in force, the
// devices that claim one of the NQNs whose pin changed: those refused now
// leave the index, those allowed now enter it (Diff then tells the hosts).
func (e *Engine) rejudge(changed []string, out *Output) {
	cfg := e.ix.Config()
	for _, a := range e.targets.claiming(changed) {
		if _, retiring := e.retiring[a]; retiring {
			continue // its new epoch is judged when it comes
		}
		cur, present := e.targets.Get(a)
		cur = e.pins.allowed(cfg, a, cur, present)
		if refused := e.pins.judge(cfg, a, cur, present, out); present && cur.State == inof.StateActive && !refused {
			_ = e.ix.Put(cur.Device) // a record the index took before, or kept out by its pin only: valid
		} else {
			e.ix.Remove(a)
		}
	}
}

// rejudge brings the discovery view of every device claiming an NQN whose
// pin changed up to the engine's judgement (after setConfig).
func (d *discoveryPart) rejudge(e *Engine, changed []string) {
	for _, a := range e.targets.claiming(changed) {
		d.touch(e, a)
	}
}

// claiming returns, sorted, the addresses with a record claiming one of
// the NQNs.
func (t *Targets) claiming(nqns []string) []netip.Addr {
	if len(nqns) == 0 {
		return nil
	}
	var addrs []netip.Addr
	for a, rs := range t.byAddr {
		if slices.ContainsFunc(rs, func(r inof.Report) bool { return r.Device.NQN != "" && slices.Contains(nqns, r.Device.NQN) }) {
			addrs = append(addrs, a)
		}
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	return addrs
}

// memberZones returns the custom zones a local record is in under the
// configuration in force, none when its pins refuse the record's claim: it
// is then published under the default zone's route target only, which
// pulls no zone's records to this switch on its behalf.
func (e *Engine) memberZones(r inof.Report) []string {
	if e.ix.Config().Refuses(r) {
		return nil
	}
	return e.ix.ZonesOf(r.Device)
}

// EventPublisher takes the agent's events for the API's event feed
// (api.Feed).
type EventPublisher interface {
	Publish(api.Event)
}

// pinReport counts, logs and publishes the refusals the engine decides.
// The loop calls it; the counter is read at scrape time.
type pinReport struct {
	log     *slog.Logger
	lines   *ratelimit.Log // a device on a port can cause these: one line a second
	events  EventPublisher // nil: none
	refused prometheus.Counter
}

func newPinReport(cfg Config) (*pinReport, error) {
	p := &pinReport{log: cfg.Logger, lines: ratelimit.NewLog(0, nil), events: cfg.Events,
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "inof_switch_pin_refusals_total",
			Help: "Device records (this switch's registrations and other switches' records) refused because they claim a " +
				"pinned NQN on a switch port outside its pin: each begins to be refused once."})}
	if cfg.Registry != nil {
		if err := cfg.Registry.Register(p.refused); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	return p, nil
}

// report handles the refusals of one engine output.
func (p *pinReport) report(self inof.RouterID, rs []Refusal) {
	for _, r := range rs {
		p.refused.Inc()
		rec := r.Record
		where := "another switch's record"
		if rec.Switch == self {
			where = "a registration on this switch"
		}
		nqn := inof.Truncate(rec.Device.NQN, inof.MaxNQNLen)
		p.lines.Warn(p.log, "device refused: it claims a pinned NQN on a switch port outside its pin (not in any zone, no host is told)",
			"device", rec.Device.Addr.String(), "nqn", nqn, "switch", rec.Switch.String(),
			"port", inof.Truncate(rec.AccessPort, 64), "from", where)
		if p.events == nil {
			continue
		}
		at := make([]string, len(r.Claim.Pin.At))
		for i, l := range r.Claim.Pin.At {
			at[i] = l.String()
		}
		p.events.Publish(api.Event{Kind: "pin", Subject: rec.Device.Addr.String(),
			Message: fmt.Sprintf("refused: %s claims %s on %s:%s, pinned to %s", rec.Device.Addr, rec.Device.NQN,
				rec.Switch, rec.AccessPort, strings.Join(at, ", ")),
			Attributes: map[string]string{"nqn": rec.Device.NQN, "switch": rec.Switch.String(), "port": rec.AccessPort,
				"pinned": strings.Join(at, ", ")}})
	}
}
