package zones

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/openinof/inof/inof"
)

// Pin limits.
const (
	// MaxPinPorts bounds the switch ports of one pin (a pin replicates as
	// one part: 64 ports of the longest names fit).
	MaxPinPorts = 64
	// MaxPortNameLen bounds an access port's name in a pin.
	MaxPortNameLen = 32
)

// ErrPin wraps every problem with a pin.
var ErrPin = errors.New("invalid pin")

// Location is one access port of one switch: where a device registers.
// Its text form is "ROUTER-ID:PORT" ("10.0.0.11:Ethernet4").
type Location struct {
	Switch inof.RouterID
	Port   string
}

func (l Location) String() string { return l.Switch.String() + ":" + l.Port }

// ParseLocation parses the text form of a location.
func ParseLocation(s string) (Location, error) {
	sw, port, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return Location{}, fmt.Errorf("%w: %q: want SWITCH:PORT (the switch's router-id, the access port's name)", ErrPin, s)
	}
	rid, err := inof.ParseRouterID(sw)
	if err != nil {
		return Location{}, fmt.Errorf("%w: %q: switch: %w", ErrPin, s, err)
	}
	l := Location{Switch: rid, Port: port}
	return l, l.Validate()
}

// Validate checks one location on its own.
func (l Location) Validate() error {
	if l.Switch == 0 {
		return fmt.Errorf("%w: %s: switch router-id 0", ErrPin, l)
	}
	if l.Port == "" || len(l.Port) > MaxPortNameLen || strings.IndexFunc(l.Port, notPrintable) >= 0 {
		return fmt.Errorf("%w: port %q: 1 to %d printable bytes without blanks", ErrPin, l.Port, MaxPortNameLen)
	}
	return nil
}

// Pin binds an NQN to the access ports where devices may claim it: a
// device that claims a pinned NQN anywhere else is refused (it joins no
// zone and no host is told about it). A device declares its NQN itself and
// no LLDP field tells two devices on two ports apart, so only an admin can
// say where an NQN belongs (docs/security.md).
type Pin struct {
	NQN string
	At  []Location // sorted, no duplicates
}

// Allows reports whether a device on l may claim the pin's NQN.
func (p *Pin) Allows(l Location) bool { return slices.Contains(p.At, l) }

// Validate checks the pin on its own.
func (p *Pin) Validate() error {
	var errs []error
	if err := inof.ValidateNQN(p.NQN); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrPin, err))
	}
	if len(p.At) == 0 {
		errs = append(errs, fmt.Errorf("%w: %s: no switch port (remove the pin instead)", ErrPin, p.NQN))
	}
	if len(p.At) > MaxPinPorts {
		errs = append(errs, fmt.Errorf("%w: %s: %d switch ports (at most %d)", ErrPin, p.NQN, len(p.At), MaxPinPorts))
	}
	seen := map[Location]bool{}
	for _, l := range p.At {
		if err := l.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("pin %s: %w", p.NQN, err))
			continue
		}
		if seen[l] {
			errs = append(errs, fmt.Errorf("%w: %s: %s twice: %w", ErrPin, p.NQN, l, ErrDuplicate))
		}
		seen[l] = true
	}
	return errors.Join(errs...)
}

// NewPin returns the pin of nqn to the locations, sorted; it checks them.
func NewPin(nqn string, at ...Location) (*Pin, error) {
	p := &Pin{NQN: nqn, At: sortLocations(at)}
	return p, p.Validate()
}

func sortLocations(at []Location) []Location {
	out := slices.Clone(at)
	slices.SortFunc(out, compareLocations)
	return out
}

func compareLocations(a, b Location) int {
	if a.Switch != b.Switch {
		if a.Switch < b.Switch {
			return -1
		}
		return 1
	}
	return strings.Compare(a.Port, b.Port)
}

// PinNQNs returns the pinned NQNs, sorted.
func (c *Config) PinNQNs() []string {
	out := make([]string, 0, len(c.Pins))
	for n := range c.Pins {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Claim is the judgement of one device's claim to its NQN under a
// configuration's pins.
type Claim struct {
	Pin *Pin // the pin of the NQN; nil when it is not pinned
	At  Location
}

// Refused reports whether the claim breaks the NQN's pin.
func (c Claim) Refused() bool { return c.Pin != nil && !c.Pin.Allows(c.At) }

func (c Claim) String() string {
	if c.Pin == nil {
		return "unpinned"
	}
	at := make([]string, len(c.Pin.At))
	for i, l := range c.Pin.At {
		at[i] = l.String()
	}
	if c.Refused() {
		return fmt.Sprintf("%s claimed on %s, pinned to %s", c.Pin.NQN, c.At, strings.Join(at, ", "))
	}
	return fmt.Sprintf("%s on %s, as pinned", c.Pin.NQN, c.At)
}

// Judge judges the claim of a device reported by switch sw on access port
// port to its NQN: a device without an NQN, or with an NQN no pin names,
// claims nothing the configuration checks.
func (c *Config) Judge(d inof.Device, sw inof.RouterID, port string) Claim {
	at := Location{Switch: sw, Port: port}
	if d.NQN == "" {
		return Claim{At: at}
	}
	return Claim{Pin: c.Pins[d.NQN], At: at}
}

// Refuses reports whether the configuration's pins refuse r's claim to
// its NQN.
func (c *Config) Refuses(r inof.Report) bool {
	return len(c.Pins) > 0 && c.Judge(r.Device, r.Switch, r.AccessPort).Refused()
}

// PinsChanged reports the NQNs whose pin differs between two
// configurations (added, removed or moved), sorted.
func PinsChanged(old, new *Config) []string {
	var out []string
	for n, p := range new.Pins {
		if o := old.Pins[n]; o == nil || !slices.Equal(o.At, p.At) {
			out = append(out, n)
		}
	}
	for n := range old.Pins {
		if new.Pins[n] == nil {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
