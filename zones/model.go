package zones

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"unicode"

	"github.com/openinof/inof/inof"
)

// DefaultZone is the name of the zone that always exists. It has no member
// list: when enabled, it holds every device that is in no custom zone.
const DefaultZone = "default"

// Limits.
const (
	MaxNameLen = 63
	MaxNQNLen  = inof.MaxNQNLen
	// MaxMembers bounds the members of one zone or alias (the store encodes
	// the count in 16 bits); anything within it also replicates (Parts).
	MaxMembers = 0xFFFF
)

// Validation errors; every error from Validate or a store transaction wraps
// one of them.
var (
	ErrName        = errors.New("invalid name")
	ErrDuplicate   = errors.New("already exists")
	ErrNotFound    = errors.New("not found")
	ErrMember      = errors.New("invalid member")
	ErrUnknown     = errors.New("unknown alias")
	ErrOverlap     = errors.New("overlapping members")
	ErrReserved    = errors.New("reserved name")
	ErrAliasNested = errors.New("alias members cannot be aliases")
)

// MemberKind says how a member selects devices.
type MemberKind uint8

// Member kinds.
const (
	MemberAddr   MemberKind = iota + 1 // one IPv4 or IPv6 address
	MemberRange                        // an inclusive address range lo-hi
	MemberPrefix                       // a CIDR prefix
	MemberNQN                          // an NVMe Qualified Name
	MemberAlias                        // all members of a named alias
)

// Member selects devices for a zone or alias. Its text form (String,
// ParseMember) is what admins type: "10.0.0.5", "10.0.0.10-10.0.0.20",
// "10.0.1.0/24", "nqn.2014-08.org.example:array1", "alias:rack1".
type Member struct {
	Kind   MemberKind
	Addr   netip.Addr   // MemberAddr; low end for MemberRange
	Hi     netip.Addr   // MemberRange: high end, inclusive
	Prefix netip.Prefix // MemberPrefix, masked
	Name   string       // MemberNQN: the NQN; MemberAlias: the alias name
}

const aliasPrefix = "alias:"

// ParseMember parses the text form of a member.
func ParseMember(s string) (Member, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return Member{}, fmt.Errorf("%w: empty", ErrMember)
	case strings.HasPrefix(s, aliasPrefix):
		m := Member{Kind: MemberAlias, Name: s[len(aliasPrefix):]}
		return m, m.Validate()
	case looksLikeName(s):
		if err := inof.ValidateNQN(s); err != nil {
			return Member{}, fmt.Errorf("%w: %v", ErrMember, err)
		}
		m := Member{Kind: MemberNQN, Name: s}
		return m, m.Validate()
	case strings.Contains(s, "/"):
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return Member{}, fmt.Errorf("%w: %q: %v", ErrMember, s, err)
		}
		m := Member{Kind: MemberPrefix, Prefix: p}
		return m, m.Validate()
	case strings.Contains(s, "-"):
		lo, hi, _ := strings.Cut(s, "-")
		a, err1 := netip.ParseAddr(strings.TrimSpace(lo))
		b, err2 := netip.ParseAddr(strings.TrimSpace(hi))
		if err := errors.Join(err1, err2); err != nil {
			return Member{}, fmt.Errorf("%w: range %q: %v", ErrMember, s, err)
		}
		m := Member{Kind: MemberRange, Addr: a, Hi: b}
		return m, m.Validate()
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return Member{}, fmt.Errorf("%w: %q is no address, range, prefix, NQN (nqn.…) or alias (alias:NAME)", ErrMember, s)
	}
	m := Member{Kind: MemberAddr, Addr: a}
	return m, m.Validate()
}

// MustParseMember is ParseMember for tests and literals; it panics on error.
func MustParseMember(s string) Member {
	m, err := ParseMember(s)
	if err != nil {
		panic(err)
	}
	return m
}

// Validate checks one member on its own.
func (m Member) Validate() error {
	switch m.Kind {
	case MemberAddr:
		if !usableAddr(m.Addr) {
			return fmt.Errorf("%w: address %s", ErrMember, m.Addr)
		}
	case MemberRange:
		if !usableAddr(m.Addr) || !usableAddr(m.Hi) || m.Addr.Is4() != m.Hi.Is4() {
			return fmt.Errorf("%w: range %s-%s needs two addresses of one family", ErrMember, m.Addr, m.Hi)
		}
		if m.Hi.Less(m.Addr) {
			return fmt.Errorf("%w: range %s-%s runs backwards", ErrMember, m.Addr, m.Hi)
		}
	case MemberPrefix:
		if !m.Prefix.IsValid() || m.Prefix.Addr().Zone() != "" {
			return fmt.Errorf("%w: prefix %s", ErrMember, m.Prefix)
		}
		if m.Prefix.Masked() != m.Prefix {
			return fmt.Errorf("%w: prefix %s has host bits set (did you mean %s?)", ErrMember, m.Prefix, m.Prefix.Masked())
		}
	case MemberNQN:
		if len(m.Name) > MaxNQNLen || !strings.HasPrefix(m.Name, "nqn.") || strings.IndexFunc(m.Name, notPrintable) >= 0 {
			return fmt.Errorf("%w: NQN %q (must start with \"nqn.\", at most %d bytes, no blanks)", ErrMember, m.Name, MaxNQNLen)
		}
	case MemberAlias:
		if err := ValidateName(m.Name); err != nil {
			return fmt.Errorf("alias member: %w", err)
		}
	default:
		return fmt.Errorf("%w: kind %d", ErrMember, m.Kind)
	}
	return nil
}

// looksLikeName tells a member meant as an NQN (or mistyped as another
// kind of storage name) from an address.
func looksLikeName(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "nqn.") || strings.HasPrefix(l, "iqn.") || strings.HasPrefix(l, "eui.")
}

func notPrintable(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }

func usableAddr(a netip.Addr) bool {
	return a.IsValid() && !a.IsUnspecified() && !a.IsMulticast() && a.Zone() == "" && !a.Is4In6()
}

func (m Member) String() string {
	switch m.Kind {
	case MemberAddr:
		return m.Addr.String()
	case MemberRange:
		return m.Addr.String() + "-" + m.Hi.String()
	case MemberPrefix:
		return m.Prefix.String()
	case MemberNQN:
		return m.Name
	case MemberAlias:
		return aliasPrefix + m.Name
	}
	return fmt.Sprintf("member(%d)", m.Kind)
}

// bounds returns the address interval an address-kind member covers.
func (m Member) bounds() (lo, hi netip.Addr, ok bool) {
	switch m.Kind {
	case MemberAddr:
		return m.Addr, m.Addr, true
	case MemberRange:
		return m.Addr, m.Hi, true
	case MemberPrefix:
		return m.Prefix.Addr(), lastAddr(m.Prefix), true
	}
	return netip.Addr{}, netip.Addr{}, false
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// ValidateName checks a zone or alias name: 1 to 63 bytes of letters,
// digits, '_', '-' and '.', starting with a letter or digit.
func ValidateName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("%w: %q must be 1 to %d bytes", ErrName, name, MaxNameLen)
	}
	for i, c := range name {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || (c != '_' && c != '-' && c != '.')) {
			return fmt.Errorf("%w: %q: use letters, digits, '_', '-', '.', starting with a letter or digit", ErrName, name)
		}
	}
	return nil
}

// Settings are the fabric-wide zoning switches.
type Settings struct {
	// DefaultZoneEnabled puts every device that is in no custom zone into
	// the default zone, where such devices see each other (plug and play).
	DefaultZoneEnabled bool
	// HardZoning isolates the default zone from custom zones: an unzoned
	// device and a zoned device never see each other. With it off, unzoned
	// devices are visible to (and see) zoned ones as well.
	HardZoning bool
}

// DefaultSettings are what a new fabric starts with: plug and play for
// unzoned devices, custom zones isolated from them.
func DefaultSettings() Settings { return Settings{DefaultZoneEnabled: true, HardZoning: true} }

// Zone is a named set of members; devices that match a common zone may see
// each other (hosts see targets).
type Zone struct {
	Name    string
	Members []Member
}

// Alias names a set of members (addresses, ranges, prefixes, NQNs) to use in
// zones. Aliases do not nest.
type Alias struct {
	Name    string
	Members []Member
}

// Config is a whole zoning configuration.
type Config struct {
	Settings Settings
	Zones    map[string]*Zone
	Aliases  map[string]*Alias
	// Pins bind NQNs to the access ports where devices may claim them
	// (Pin), keyed by NQN.
	Pins map[string]*Pin
}

// NewConfig returns an empty configuration with the given settings.
func NewConfig(s Settings) *Config {
	return &Config{Settings: s, Zones: map[string]*Zone{}, Aliases: map[string]*Alias{}, Pins: map[string]*Pin{}}
}

// Clone returns a deep copy.
func (c *Config) Clone() *Config {
	out := NewConfig(c.Settings)
	for n, z := range c.Zones {
		out.Zones[n] = &Zone{Name: z.Name, Members: append([]Member(nil), z.Members...)}
	}
	for n, a := range c.Aliases {
		out.Aliases[n] = &Alias{Name: a.Name, Members: append([]Member(nil), a.Members...)}
	}
	for n, p := range c.Pins {
		out.Pins[n] = &Pin{NQN: p.NQN, At: append([]Location(nil), p.At...)}
	}
	return out
}

// ZoneNames returns the custom zone names, sorted.
func (c *Config) ZoneNames() []string {
	names := make([]string, 0, len(c.Zones))
	for n := range c.Zones {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Validate checks the whole configuration and returns every problem found
// (joined), so an admin sees them all at once.
func (c *Config) Validate() error {
	var errs []error
	for name, a := range c.Aliases {
		if err := ValidateName(name); err != nil || a.Name != name {
			errs = append(errs, fmt.Errorf("alias %q: %w", name, errors.Join(err, nameMismatch(name, a.Name))))
			continue
		}
		for _, m := range a.Members {
			if m.Kind == MemberAlias {
				errs = append(errs, fmt.Errorf("alias %q member %s: %w", name, m, ErrAliasNested))
			}
		}
		errs = append(errs, checkMembers("alias "+name, a.Members)...)
		if _, clash := c.Zones[name]; clash {
			errs = append(errs, fmt.Errorf("alias %q: a zone has that name: %w", name, ErrDuplicate))
		}
	}
	for name, z := range c.Zones {
		if err := ValidateName(name); err != nil || z.Name != name {
			errs = append(errs, fmt.Errorf("zone %q: %w", name, errors.Join(err, nameMismatch(name, z.Name))))
			continue
		}
		if strings.EqualFold(name, DefaultZone) {
			errs = append(errs, fmt.Errorf("zone %q: %w: the default zone has no member list", name, ErrReserved))
		}
		for _, m := range z.Members {
			if m.Kind == MemberAlias && c.Aliases[m.Name] == nil {
				errs = append(errs, fmt.Errorf("zone %q member %s: %w", name, m, ErrUnknown))
			}
		}
		errs = append(errs, checkMembers("zone "+name, z.Members)...)
	}
	for nqn, p := range c.Pins {
		if p.NQN != nqn {
			errs = append(errs, fmt.Errorf("pin %q: %w: stored under %q but names %q", nqn, ErrPin, nqn, p.NQN))
			continue
		}
		if err := p.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

func nameMismatch(key, name string) error {
	if key != name {
		return fmt.Errorf("%w: stored under %q but named %q", ErrName, key, name)
	}
	return nil
}

// checkMembers validates each member and rejects duplicates and address
// members that overlap within one list (one would make the other pointless,
// which is always a typo worth hearing about).
func checkMembers(owner string, ms []Member) []error {
	var errs []error
	if len(ms) > MaxMembers {
		errs = append(errs, fmt.Errorf("%s: %w: %d members (at most %d)", owner, ErrMember, len(ms), MaxMembers))
	}
	seen := map[Member]bool{}
	type span struct {
		lo, hi netip.Addr
		m      Member
	}
	var spans []span
	for _, m := range ms {
		if err := m.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", owner, err))
			continue
		}
		if seen[m] {
			errs = append(errs, fmt.Errorf("%s member %s: %w", owner, m, ErrDuplicate))
			continue
		}
		seen[m] = true
		if lo, hi, ok := m.bounds(); ok {
			spans = append(spans, span{lo, hi, m})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo.Less(spans[j].lo) })
	for i := 1; i < len(spans); i++ {
		prev, cur := spans[i-1], spans[i]
		if prev.lo.Is4() == cur.lo.Is4() && !prev.hi.Less(cur.lo) {
			errs = append(errs, fmt.Errorf("%s: %s and %s: %w", owner, prev.m, cur.m, ErrOverlap))
		}
	}
	return errs
}

// Covers reports whether an address member (address, range, prefix)
// selects the address.
func (m Member) Covers(a netip.Addr) bool {
	lo, hi, ok := m.bounds()
	return ok && lo.Is4() == a.Is4() && !a.Less(lo) && !hi.Less(a)
}
