package l2proto

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"syscall"
	"time"
)

// SwitchPortConfig wires one switch access port.
type SwitchPortConfig struct {
	Link     Link
	Registry *Registry // receives LLDP registrations
	Notifier *Notifier // receives ACKs
	// OnQuery answers a host's zone query (typically with notifications for
	// every target the host may see). Optional.
	OnQuery func(port string, q ZoneQuery)
	Drops   *DropCounter // optional; one is made if nil
	// Limits bound how fast the port's hosts may register and query;
	// zero fields take DefaultLimits'.
	Limits PortLimits
	Logger *slog.Logger
}

// Rate is a token bucket: PerSecond on average, Burst at once.
type Rate struct {
	PerSecond, Burst int
}

// PortLimits bound what the hosts on one access port may send. Beyond
// them LLDPDUs and zone queries are dropped and counted
// ("rate-registrations", "rate-queries"): a host registers every ~30 s and
// queries once per registration, so the defaults leave room for a port
// facing DefaultMaxEntriesPerPort addresses that all come up at once, and
// none for a flood.
type PortLimits struct {
	Registrations Rate
	Queries       Rate
}

// DefaultLimits are the limits of a port whose SwitchPortConfig sets none.
var DefaultLimits = PortLimits{
	Registrations: Rate{PerSecond: 20, Burst: DefaultMaxEntriesPerPort},
	Queries:       Rate{PerSecond: 20, Burst: DefaultMaxEntriesPerPort},
}

// Errors for frames over a port's limits.
var (
	ErrRateRegistrations = errors.New("registration rate of the port exceeded")
	ErrRateQueries       = errors.New("zone query rate of the port exceeded")
)

// SwitchPort reads one access port and dispatches what arrives: LLDP
// registrations to the registry, ACKs to the notifier, zone queries to
// OnQuery. Malformed frames, registrations the registry refuses (table
// bounds) and notifications (hosts never send them) are counted and dropped,
// and logged at most once a second per reason; nothing a host sends can stop
// the loop.
type SwitchPort struct {
	cfg             SwitchPortConfig
	lldpRate, qRate *pacer // owned by the reading goroutine
}

// NewSwitchPort checks cfg.
func NewSwitchPort(cfg SwitchPortConfig) (*SwitchPort, error) {
	if cfg.Link == nil || cfg.Registry == nil || cfg.Notifier == nil {
		return nil, errors.New("l2proto: switch port needs a link, a registry and a notifier")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Drops == nil {
		cfg.Drops = NewDropCounter(cfg.Logger, 0)
	}
	rate := func(r, def Rate) Rate {
		if r.PerSecond <= 0 {
			r.PerSecond = def.PerSecond
		}
		if r.Burst <= 0 {
			r.Burst = def.Burst
		}
		return r
	}
	cfg.Limits.Registrations = rate(cfg.Limits.Registrations, DefaultLimits.Registrations)
	cfg.Limits.Queries = rate(cfg.Limits.Queries, DefaultLimits.Queries)
	now := time.Now()
	return &SwitchPort{cfg: cfg,
		lldpRate: newPacer(cfg.Limits.Registrations.PerSecond, cfg.Limits.Registrations.Burst, now),
		qRate:    newPacer(cfg.Limits.Queries.PerSecond, cfg.Limits.Queries.Burst, now)}, nil
}

// Drops returns the port's drop counters.
func (p *SwitchPort) Drops() *DropCounter { return p.cfg.Drops }

// netDownPause is how long Run waits after the port reported ENETDOWN
// before reading again, so a port that stays down costs no CPU.
const netDownPause = 100 * time.Millisecond

// Run reads until ctx ends or the link fails, and closes the link when it
// returns (Run owns it). It returns ctx.Err() after ctx ends, else the read
// error.
func (p *SwitchPort) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { p.cfg.Link.Close() })
	defer func() {
		stop()
		p.cfg.Link.Close()
	}()
	name := p.cfg.Link.Name()
	// One buffer and one Decoder serve every frame: handle keeps nothing
	// of either past its return (the registry copies what it stores).
	buf := make([]byte, MaxFrameLen+4)
	dec := new(Decoder)
	for {
		n, err := p.cfg.Link.ReadFrame(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return ctx.Err()
			}
			if errors.Is(err, syscall.ENETDOWN) {
				// The port went administratively down: the socket reports it
				// once and works again when the port comes back. Link down
				// itself reaches the registry through the link watcher.
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(netDownPause):
				}
				continue
			}
			return fmt.Errorf("l2proto: read %s: %w", name, err)
		}
		p.handle(dec, name, buf[:n], time.Now())
	}
}

// errNotifyOnSwitchPort is logged for notifications a host sent.
var errNotifyOnSwitchPort = errors.New("notification received on a switch port")

// handle dispatches one frame, decoded with dec into borrowed storage that
// none of the receivers keeps.
func (p *SwitchPort) handle(dec *Decoder, port string, b []byte, now time.Time) {
	f, err := dec.Decode(b)
	if err != nil {
		p.cfg.Drops.Drop(port, err)
		if f.Message == nil {
			return
		}
	}
	switch {
	case f.LLDP != nil:
		if !p.lldpRate.allow(now) {
			p.cfg.Drops.Drop(port, ErrRateRegistrations)
			return
		}
		if err := p.cfg.Registry.Observe(port, f.Source, f.LLDP, now); err != nil {
			p.cfg.Drops.Drop(port, err) // refused: a table bound was reached, or the MAC is bound elsewhere
		}
	case f.Message != nil:
		if len(f.Message.Notifications) > 0 {
			p.cfg.Drops.DropReason(port, "unexpected", errNotifyOnSwitchPort)
		}
		if len(f.Message.Acks) > 0 {
			p.cfg.Notifier.Ack(f.Message.Acks...)
		}
		if p.cfg.OnQuery != nil {
			for _, q := range f.Message.Queries {
				if !p.qRate.allow(now) {
					p.cfg.Drops.Drop(port, ErrRateQueries)
					continue
				}
				p.cfg.OnQuery(port, q)
			}
		}
	}
}
