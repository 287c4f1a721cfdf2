package soak

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"

	"github.com/openinof/inof/zones"
)

// Edit is one zoning change as an admin types it: the inofctl arguments
// (without --yes), what it does to a configuration and which objects it
// writes.
type Edit struct {
	Args  []string
	Apply func(*zones.Config) error
	Keys  []string // settings, zone:NAME, alias:NAME
}

func (e Edit) String() string { return strings.Join(e.Args, " ") }

// Zone and alias names edits may use; at least minZones zones stay.
var (
	zoneNames  = []string{"zA", "zB", "zC", "zD", "zE", "zF", "zG"}
	aliasNames = []string{"rackA", "arrays", "al1", "al2"}
)

const minZones = 4

// members is every member an edit may use: each NIC's addresses and
// prefix, the NQNs, a few ranges, and (added per configuration) aliases.
func (l *Layout) members() []zones.Member {
	var out []zones.Member
	seen := map[string]bool{}
	add := func(m zones.Member) {
		if !seen[m.String()] {
			seen[m.String()] = true
			out = append(out, m)
		}
	}
	for _, n := range l.NICs {
		for _, a := range n.Pool {
			add(zones.Member{Kind: zones.MemberAddr, Addr: a})
		}
		add(zones.Member{Kind: zones.MemberPrefix, Prefix: n.Prefix})
		if n.NQN != "" {
			add(zones.Member{Kind: zones.MemberNQN, Name: n.NQN})
		}
	}
	// Ranges across devices: first NICs of devices 1-4, 5-9, 8-15.
	for _, r := range [][2]int{{1, 4}, {5, 9}, {8, 15}} {
		lo := netip.AddrFrom4([4]byte{10, 100, byte(r[0]), 2})
		hi := netip.AddrFrom4([4]byte{10, 100, byte(r[1]), 4})
		add(zones.Member{Kind: zones.MemberRange, Addr: lo, Hi: hi})
	}
	return out
}

// editPicker draws edit details from one pick, so the same pick over the
// same configuration gives the same edit.
type editPicker struct {
	rng *rand.Rand
	l   *Layout
	c   *zones.Config
}

func newEditPicker(pick uint64, l *Layout, c *zones.Config) *editPicker {
	return &editPicker{rng: rand.New(rand.NewPCG(pick, pick>>1^0x51ed2701)), l: l, c: c}
}

func (p *editPicker) oneOf(xs []string) string { return xs[p.rng.IntN(len(xs))] }

// member draws a member; aliases of the configuration among them when
// withAliases.
func (p *editPicker) member(withAliases bool) zones.Member {
	ms := p.l.members()
	if withAliases {
		for _, a := range sortedKeys(p.c.Aliases) {
			ms = append(ms, zones.Member{Kind: zones.MemberAlias, Name: a})
		}
	}
	return ms[p.rng.IntN(len(ms))]
}

// members draws 1..n distinct members not in have.
func (p *editPicker) members(n int, withAliases bool, have []zones.Member) []zones.Member {
	var out []zones.Member
	for range 1 + p.rng.IntN(n) {
		m := p.member(withAliases)
		if !slices.Contains(have, m) && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func memberArgs(ms []zones.Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.String()
	}
	return out
}

// ZoneEditFor resolves a ZoneEdit's pick against configuration c: a valid
// zone create, delete, add, remove or rename. ok is false if none was
// found.
func ZoneEditFor(pick uint64, l *Layout, c *zones.Config) (Edit, bool) {
	return valid(pick, l, c, (*editPicker).zoneEdit)
}

// AliasEditFor resolves an AliasChange's pick: an alias created, deleted,
// grown or shrunk, or an alias put into or taken out of a zone.
func AliasEditFor(pick uint64, l *Layout, c *zones.Config) (Edit, bool) {
	return valid(pick, l, c, (*editPicker).aliasEdit)
}

// SettingsEditFor resolves a HardZoning fault: hard zoning toggled (three
// times in four) or the default zone.
func SettingsEditFor(pick uint64, c *zones.Config) Edit {
	p := newEditPicker(pick, nil, c)
	if p.rng.IntN(4) == 0 {
		on := !c.Settings.DefaultZoneEnabled
		return Edit{Args: []string{"fabric", "set", "default-zone", onOff(on)}, Keys: []string{"settings"},
			Apply: func(c *zones.Config) error { c.Settings.DefaultZoneEnabled = on; return nil }}
	}
	on := !c.Settings.HardZoning
	return Edit{Args: []string{"fabric", "set", "hard-zoning", onOff(on)}, Keys: []string{"settings"},
		Apply: func(c *zones.Config) error { c.Settings.HardZoning = on; return nil }}
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// valid draws edits until one applies to c and leaves it valid.
func valid(pick uint64, l *Layout, c *zones.Config, draw func(*editPicker) (Edit, bool)) (Edit, bool) {
	p := newEditPicker(pick, l, c)
	for range 30 {
		e, ok := draw(p)
		if !ok {
			continue
		}
		next := c.Clone()
		if e.Apply(next) != nil || next.Validate() != nil {
			continue
		}
		return e, true
	}
	return Edit{}, false
}

func (p *editPicker) zoneEdit() (Edit, bool) {
	c := p.c
	have := sortedKeys(c.Zones)
	switch p.rng.IntN(5) {
	case 0: // create
		free := slices.DeleteFunc(slices.Clone(zoneNames), func(n string) bool { return c.Zones[n] != nil || c.Aliases[n] != nil })
		if len(free) == 0 {
			return Edit{}, false
		}
		name, ms := p.oneOf(free), p.members(3, true, nil)
		return Edit{Args: append([]string{"zone", "create", name}, memberArgs(ms)...), Keys: []string{"zone:" + name},
			Apply: func(c *zones.Config) error {
				c.Zones[name] = &zones.Zone{Name: name, Members: slices.Clone(ms)}
				return nil
			}}, true
	case 1: // delete
		if len(have) <= minZones {
			return Edit{}, false
		}
		name := p.oneOf(have)
		return Edit{Args: []string{"zone", "delete", name}, Keys: []string{"zone:" + name},
			Apply: func(c *zones.Config) error { return deleteObject(c.Zones, name) }}, true
	case 2: // add
		name := p.oneOf(have)
		ms := p.members(2, true, c.Zones[name].Members)
		if len(ms) == 0 {
			return Edit{}, false
		}
		return zoneAddEdit(name, ms...), true
	case 3: // remove
		name := p.oneOf(have)
		cur := c.Zones[name].Members
		if len(cur) == 0 {
			return Edit{}, false
		}
		m := cur[p.rng.IntN(len(cur))]
		return zoneRemoveEdit(name, m), true
	default: // rename
		free := slices.DeleteFunc(slices.Clone(zoneNames), func(n string) bool { return c.Zones[n] != nil || c.Aliases[n] != nil })
		if len(free) == 0 {
			return Edit{}, false
		}
		from, to := p.oneOf(have), p.oneOf(free)
		return Edit{Args: []string{"zone", "rename", from, to}, Keys: []string{"zone:" + from, "zone:" + to},
			Apply: func(c *zones.Config) error {
				z := c.Zones[from]
				if z == nil || c.Zones[to] != nil {
					return zones.ErrNotFound
				}
				delete(c.Zones, from)
				c.Zones[to] = &zones.Zone{Name: to, Members: slices.Clone(z.Members)}
				return nil
			}}, true
	}
}

// deleteObject deletes the zone or alias name, refused with NotFound when
// there is none, as the store refuses it: an edit drawn from the model's
// zoning may meet a candidate of concurrent edits without the object, and
// only an Apply that fails there explains the refusal (the 11-minute soak,
// seed 16243500294112775592: `zone delete zA` refused on rr2 was taken
// for a finding).
func deleteObject[V any](m map[string]V, name string) error {
	if _, ok := m[name]; !ok {
		return zones.ErrNotFound
	}
	delete(m, name)
	return nil
}

// removeMember removes m from the zone name of zs.
func removeMember(zs *map[string]*zones.Zone, name string, m zones.Member) error {
	z := (*zs)[name]
	if z == nil || !slices.Contains(z.Members, m) {
		return zones.ErrNotFound
	}
	z.Members = slices.DeleteFunc(slices.Clone(z.Members), func(x zones.Member) bool { return x == m })
	return nil
}

func (p *editPicker) aliasEdit() (Edit, bool) {
	c := p.c
	have := sortedKeys(c.Aliases)
	switch p.rng.IntN(6) {
	case 0: // create
		free := slices.DeleteFunc(slices.Clone(aliasNames), func(n string) bool { return c.Aliases[n] != nil || c.Zones[n] != nil })
		if len(free) == 0 {
			return Edit{}, false
		}
		name, ms := p.oneOf(free), p.members(3, false, nil)
		return Edit{Args: append([]string{"alias", "create", name}, memberArgs(ms)...), Keys: []string{"alias:" + name},
			Apply: func(c *zones.Config) error {
				c.Aliases[name] = &zones.Alias{Name: name, Members: slices.Clone(ms)}
				return nil
			}}, true
	case 1: // delete (refused while a zone uses it: Validate says so)
		if len(have) == 0 {
			return Edit{}, false
		}
		name := p.oneOf(have)
		return Edit{Args: []string{"alias", "delete", name}, Keys: []string{"alias:" + name},
			Apply: func(c *zones.Config) error { return deleteObject(c.Aliases, name) }}, true
	case 2, 3: // add
		if len(have) == 0 {
			return Edit{}, false
		}
		name := p.oneOf(have)
		ms := p.members(2, false, c.Aliases[name].Members)
		if len(ms) == 0 {
			return Edit{}, false
		}
		return Edit{Args: append([]string{"alias", "add", name}, memberArgs(ms)...), Keys: []string{"alias:" + name},
			Apply: func(c *zones.Config) error {
				a := c.Aliases[name]
				if a == nil {
					return zones.ErrNotFound
				}
				for _, m := range ms {
					if slices.Contains(a.Members, m) {
						return zones.ErrDuplicate
					}
				}
				a.Members = append(slices.Clone(a.Members), ms...)
				return nil
			}}, true
	case 4: // remove
		if len(have) == 0 {
			return Edit{}, false
		}
		name := p.oneOf(have)
		cur := c.Aliases[name].Members
		if len(cur) == 0 {
			return Edit{}, false
		}
		m := cur[p.rng.IntN(len(cur))]
		return Edit{Args: []string{"alias", "remove", name, m.String()}, Keys: []string{"alias:" + name},
			Apply: func(c *zones.Config) error {
				a := c.Aliases[name]
				if a == nil || !slices.Contains(a.Members, m) {
					return zones.ErrNotFound
				}
				a.Members = slices.DeleteFunc(slices.Clone(a.Members), func(x zones.Member) bool { return x == m })
				return nil
			}}, true
	default: // an alias into or out of a zone
		if len(have) == 0 {
			return Edit{}, false
		}
		name, zone := p.oneOf(have), p.oneOf(sortedKeys(c.Zones))
		m := zones.Member{Kind: zones.MemberAlias, Name: name}
		if slices.Contains(c.Zones[zone].Members, m) {
			return zoneRemoveEdit(zone, m), true
		}
		return zoneAddEdit(zone, m), true
	}
}

// Committed reports whether a failed inofctl edit's error says the
// reflector committed the edit all the same: what failed was handing it
// on (originating it, or the call's deadline ran out while replication
// ran; app/reflector). Such an edit landed, and the model must follow it.
func Committed(err error) bool {
	return err != nil && strings.Contains(err.Error(), "reflector: committed")
}

// AfterEdit returns the configurations possible after edit e was made on
// a reflector that holds one of poss (the zoning in force and, while
// concurrent edits are unresolved, their candidates): if it was taken,
// those on which e applies, with e applied; if it was refused, those on
// which it does not (left as they were). Empty means no configuration
// explains the outcome.
func AfterEdit(poss []*zones.Config, e Edit, taken bool) []*zones.Config {
	var out []*zones.Config
	for _, base := range poss {
		c := base.Clone()
		applies := e.Apply(c) == nil && c.Validate() == nil
		if applies != taken {
			continue
		}
		if !taken {
			c = base
		}
		if !slices.ContainsFunc(out, func(o *zones.Config) bool { return SameConfig(o, c) }) {
			out = append(out, c)
		}
	}
	return out
}

// Candidates are the configurations two edits committed at the same time
// on two reflectors may leave, from any base of poss (the zoning in force
// and, while earlier concurrent edits are unresolved, their candidates):
// either applied after the other (the second reflector had merged the
// first), or each applied to base and, for every object both wrote,
// either's version winning (the newest generation wins per object). ok
// says which edits succeeded; a base an edit that succeeded does not apply
// to is no base of the outcome. Empty means no base explains it.
func Candidates(poss []*zones.Config, a, b Edit, aOK, bOK bool) []*zones.Config {
	var out []*zones.Config
	addCfg := func(c *zones.Config) {
		if !slices.ContainsFunc(out, func(o *zones.Config) bool { return SameConfig(o, c) }) {
			out = append(out, c)
		}
	}
	for _, base := range poss {
		for _, c := range candidatesFrom(base, a, b, aOK, bOK) {
			addCfg(c)
		}
	}
	return out
}

// candidatesFrom are the Candidates of two edits from one base.
func candidatesFrom(base *zones.Config, a, b Edit, aOK, bOK bool) []*zones.Config {
	var out []*zones.Config
	addCfg := func(c *zones.Config) {
		for _, o := range out {
			if SameConfig(o, c) {
				return
			}
		}
		out = append(out, c)
	}
	seq := func(first, second Edit) {
		c := base.Clone()
		if first.Apply(c) != nil || c.Validate() != nil || second.Apply(c) != nil || c.Validate() != nil {
			return
		}
		addCfg(c)
	}
	switch {
	case aOK && bOK:
		seq(a, b)
		seq(b, a)
		ca, cb := base.Clone(), base.Clone()
		if a.Apply(ca) != nil || b.Apply(cb) != nil {
			break
		}
		keys := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(a.Keys), b.Keys...))))
		var both []string
		for _, k := range keys {
			if slices.Contains(a.Keys, k) && slices.Contains(b.Keys, k) {
				both = append(both, k)
			}
		}
		for mask := 0; mask < 1<<len(both); mask++ {
			c := base.Clone()
			for _, k := range keys {
				from := ca
				if slices.Contains(b.Keys, k) {
					from = cb
				}
				if i := slices.Index(both, k); i >= 0 && mask&(1<<i) == 0 {
					from = ca
				}
				copyObject(c, from, k)
			}
			addCfg(c)
		}
	case aOK:
		seq(a, Edit{Apply: func(*zones.Config) error { return nil }})
	case bOK:
		seq(b, Edit{Apply: func(*zones.Config) error { return nil }})
	default:
		addCfg(base.Clone())
	}
	return out
}

// Passing are the configurations the fabric may hold on the way to one of
// the Candidates of two edits committed at the same time, beyond them: each
// edit that succeeded applied alone to a base of poss, which its reflector held
// until it adopted the other's, and which the switches were sent (seed
// 15397260239042831068 step 29: a zone edit on rr1 and a rename of that
// zone on rr2; the switches took rr1's edit first, a host lost a target for
// 25 ms, reason zone change, and the rename's records, with the zone's old
// members, brought it back). A notification such a configuration explains
// is fair; what hosts are told last must still match a candidate.
func Passing(poss []*zones.Config, a, b Edit, aOK, bOK bool) []*zones.Config {
	var out []*zones.Config
	for _, base := range poss {
		for _, e := range []struct {
			edit Edit
			ok   bool
		}{{a, aOK}, {b, bOK}} {
			c := base.Clone()
			if e.ok && e.edit.Apply(c) == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// copyObject sets object key of c as it is in from.
func copyObject(c, from *zones.Config, key string) {
	kind, name, _ := strings.Cut(key, ":")
	switch kind {
	case "settings":
		c.Settings = from.Settings
	case "zone":
		if z := from.Zones[name]; z != nil {
			c.Zones[name] = &zones.Zone{Name: name, Members: slices.Clone(z.Members)}
		} else {
			delete(c.Zones, name)
		}
	case "alias":
		if a := from.Aliases[name]; a != nil {
			c.Aliases[name] = &zones.Alias{Name: name, Members: slices.Clone(a.Members)}
		} else {
			delete(c.Aliases, name)
		}
	}
}

// SameConfig compares two configurations, member order aside.
func SameConfig(a, b *zones.Config) bool { return canonical(a) == canonical(b) }

func canonical(c *zones.Config) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "dz=%v hz=%v\n", c.Settings.DefaultZoneEnabled, c.Settings.HardZoning)
	for _, n := range sortedKeys(c.Zones) {
		fmt.Fprintf(&sb, "zone %s %v\n", n, slices.Sorted(slices.Values(memberArgs(c.Zones[n].Members))))
	}
	for _, n := range sortedKeys(c.Aliases) {
		fmt.Fprintf(&sb, "alias %s %v\n", n, slices.Sorted(slices.Values(memberArgs(c.Aliases[n].Members))))
	}
	return sb.String()
}

// ParseZoning reads `inofctl -o json zoning show` (its envelope's item).
func ParseZoning(out []byte) (*zones.Config, error) {
	var env struct {
		Item json.RawMessage `json:"item"`
	}
	if err := json.Unmarshal(out, &env); err != nil {
		return nil, fmt.Errorf("zoning show: %w", err)
	}
	var v struct {
		Settings struct {
			DefaultZoneEnabled bool `json:"default_zone_enabled"`
			HardZoning         bool `json:"hard_zoning"`
		} `json:"settings"`
		Zones []struct {
			Name    string   `json:"name"`
			Members []string `json:"members"`
		} `json:"zones"`
		Aliases []struct {
			Name    string   `json:"name"`
			Members []string `json:"members"`
		} `json:"aliases"`
	}
	if err := json.Unmarshal(env.Item, &v); err != nil {
		return nil, fmt.Errorf("zoning show: %w", err)
	}
	c := zones.NewConfig(zones.Settings{DefaultZoneEnabled: v.Settings.DefaultZoneEnabled, HardZoning: v.Settings.HardZoning})
	parse := func(ss []string) ([]zones.Member, error) {
		var ms []zones.Member
		for _, s := range ss {
			m, err := zones.ParseMember(s)
			if err != nil {
				return nil, err
			}
			ms = append(ms, m)
		}
		return ms, nil
	}
	for _, z := range v.Zones {
		ms, err := parse(z.Members)
		if err != nil {
			return nil, err
		}
		c.Zones[z.Name] = &zones.Zone{Name: z.Name, Members: ms}
	}
	for _, a := range v.Aliases {
		ms, err := parse(a.Members)
		if err != nil {
			return nil, err
		}
		c.Aliases[a.Name] = &zones.Alias{Name: a.Name, Members: ms}
	}
	return c, nil
}

// ConfigString renders a configuration for logs.
func ConfigString(c *zones.Config) string { return canonical(c) }

// ConfigDiff renders what got holds that want does not (+) and what want
// holds that got does not (-), a line per setting, zone or alias, for
// logs: "" when they are the same.
func ConfigDiff(want, got *zones.Config) string {
	w, g := strings.Split(canonical(want), "\n"), strings.Split(canonical(got), "\n")
	var sb strings.Builder
	for _, l := range w {
		if l != "" && !slices.Contains(g, l) {
			fmt.Fprintf(&sb, "-%s\n", l)
		}
	}
	for _, l := range g {
		if l != "" && !slices.Contains(w, l) {
			fmt.Fprintf(&sb, "+%s\n", l)
		}
	}
	return sb.String()
}

// zoneAddEdit is `inofctl zone add NAME MEMBER...`; the store refuses it
// when the zone is missing or holds one of the members already.
func zoneAddEdit(name string, ms ...zones.Member) Edit {
	return Edit{Args: append([]string{"zone", "add", name}, memberArgs(ms)...), Keys: []string{"zone:" + name},
		Apply: func(c *zones.Config) error {
			z := c.Zones[name]
			if z == nil {
				return zones.ErrNotFound
			}
			for _, m := range ms {
				if slices.Contains(z.Members, m) {
					return zones.ErrDuplicate
				}
			}
			z.Members = append(slices.Clone(z.Members), ms...)
			return nil
		}}
}

// zoneRemoveEdit is `inofctl zone remove NAME MEMBER`.
func zoneRemoveEdit(name string, m zones.Member) Edit {
	return Edit{Args: []string{"zone", "remove", name, m.String()}, Keys: []string{"zone:" + name},
		Apply: func(c *zones.Config) error { return removeMember(&c.Zones, name, m) }}
}
