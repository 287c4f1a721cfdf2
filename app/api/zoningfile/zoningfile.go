// Package zoningfile is the declarative form of a whole zoning
// configuration (the file of `inofctl zoning export` and `zoning apply -f`)
// and the plan that turns one configuration into another: the edits of one
// transaction and the member diff that inofctl prints and the console shows.
package zoningfile

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// File is the declarative form of a whole zoning configuration
// (`inofctl zoning export`, `zoning apply -f`): settings, aliases and zones
// with their members, names sorted, so that it diffs well in git; and the
// NQN pins with their switch ports. A file without pins (nil: no pins key,
// as files written before pins) leaves the pins as they are.
type File struct {
	Settings Settings            `yaml:"settings"`
	Aliases  map[string][]string `yaml:"aliases"`
	Zones    map[string][]string `yaml:"zones"`
	Pins     map[string][]string `yaml:"pins,omitempty"`
}

// Settings are the fabric-wide switches; a file must set both.
type Settings struct {
	DefaultZone *bool `yaml:"default_zone"`
	HardZoning  *bool `yaml:"hard_zoning"`
}

// Of turns a configuration from the API into its file form.
func Of(z *inofv1.Zoning) File {
	d, h := z.GetSettings().GetDefaultZoneEnabled(), z.GetSettings().GetHardZoning()
	f := File{Settings: Settings{DefaultZone: &d, HardZoning: &h},
		Aliases: map[string][]string{}, Zones: map[string][]string{}}
	for _, x := range z.GetAliases() {
		f.Aliases[x.GetName()] = append([]string{}, x.GetMembers()...)
	}
	for _, x := range z.GetZones() {
		f.Zones[x.GetName()] = append([]string{}, x.GetMembers()...)
	}
	f.Pins = map[string][]string{}
	for _, x := range z.GetPins() {
		f.Pins[x.GetNqn()] = append([]string{}, x.GetAt()...)
	}
	return f
}

// sameMembers compares two member lists as sets.
func sameMembers(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// memberDelta lists the members only in want (added) and only in cur
// (removed), each in the order of its list.
func memberDelta(cur, want []string) (added, removed []string) {
	in := map[string]bool{}
	for _, m := range cur {
		in[m] = true
	}
	for _, m := range want {
		if !in[m] {
			added = append(added, m)
		}
	}
	keep := map[string]bool{}
	for _, m := range want {
		keep[m] = true
	}
	for _, m := range cur {
		if !keep[m] {
			removed = append(removed, m)
		}
	}
	return added, removed
}

// Plan is what turns one configuration into another: the edits (one
// transaction) and the member diff shown before them.
type Plan struct {
	Edits []*inofv1.Edit
	Diff  []string // "+ zone web", "~ zone web: +10.0.0.3 -10.0.0.1", …
}

// PlanFor computes the edits from cur to want. A zone or alias whose
// members differ as a set is written anew with want's members in want's
// order (delete and create in one transaction: one record, no tombstone),
// so a rollback restores the exact revision; a list that differs only in
// order is left alone, so applying a file twice changes nothing.
func PlanFor(cur File, want File) Plan {
	var p Plan
	if *cur.Settings.DefaultZone != *want.Settings.DefaultZone || *cur.Settings.HardZoning != *want.Settings.HardZoning {
		s := &inofv1.SetSettings{}
		if *cur.Settings.DefaultZone != *want.Settings.DefaultZone {
			s.DefaultZoneEnabled = want.Settings.DefaultZone
			p.Diff = append(p.Diff, "~ settings: default-zone "+onOff(*want.Settings.DefaultZone))
		}
		if *cur.Settings.HardZoning != *want.Settings.HardZoning {
			s.HardZoning = want.Settings.HardZoning
			p.Diff = append(p.Diff, "~ settings: hard-zoning "+onOff(*want.Settings.HardZoning))
		}
		p.Edits = append(p.Edits, &inofv1.Edit{Edit: &inofv1.Edit_SetSettings{SetSettings: s}})
	}
	aliases := planNamed("alias", cur.Aliases, want.Aliases,
		func(n string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_DeleteAlias{DeleteAlias: &inofv1.DeleteAlias{Name: n}}}
		},
		func(n string, ms []string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_CreateAlias{CreateAlias: &inofv1.CreateAlias{Name: n, Members: ms}}}
		})
	zs := planNamed("zone", cur.Zones, want.Zones,
		func(n string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_DeleteZone{DeleteZone: &inofv1.DeleteZone{Name: n}}}
		},
		func(n string, ms []string) *inofv1.Edit {
			return &inofv1.Edit{Edit: &inofv1.Edit_CreateZone{CreateZone: &inofv1.CreateZone{Name: n, Members: ms}}}
		})
	// Aliases first so that zones may use new ones, alias deletions last,
	// after the zones stop using them.
	p.Diff = append(append(p.Diff, aliases.diff...), zs.diff...)
	p.Edits = append(append(append(append(p.Edits, aliases.write...), zs.write...), zs.drop...), aliases.drop...)
	if want.Pins != nil {
		pins := planNamed("pin", cur.Pins, want.Pins,
			func(n string) *inofv1.Edit {
				return &inofv1.Edit{Edit: &inofv1.Edit_RemovePin{RemovePin: &inofv1.RemovePin{Nqn: n}}}
			},
			func(n string, at []string) *inofv1.Edit {
				return &inofv1.Edit{Edit: &inofv1.Edit_SetPin{SetPin: &inofv1.Pin{Nqn: n, At: at}}}
			})
		p.Diff = append(p.Diff, pins.diff...)
		p.Edits = append(append(p.Edits, pins.write...), pins.drop...)
	}
	return p
}

// namedPlan is the part of a plan for zones or for aliases: the edits that
// create or rewrite them, the deletions, the diff lines.
type namedPlan struct {
	write, drop []*inofv1.Edit
	diff        []string
}

// planNamed plans cur → want for one kind of named member lists.
func planNamed(kind string, cur, want map[string][]string, del func(string) *inofv1.Edit,
	create func(string, []string) *inofv1.Edit) namedPlan {
	var p namedPlan
	for _, n := range sortedKeys(want) {
		ms, had := cur[n]
		switch {
		case !had:
			p.diff = append(p.diff, fmt.Sprintf("+ %s %s: %s", kind, n, TruncateList(want[n], " ", 20)))
		case sameMembers(ms, want[n]):
			continue
		default:
			p.diff = append(p.diff, changeLine(kind, n, ms, want[n]))
			p.write = append(p.write, del(n))
		}
		p.write = append(p.write, create(n, want[n]))
	}
	for _, n := range sortedKeys(cur) {
		if _, kept := want[n]; !kept {
			p.diff = append(p.diff, fmt.Sprintf("- %s %s (%d members)", kind, n, len(cur[n])))
			p.drop = append(p.drop, del(n))
		}
	}
	return p
}

// changeLine is the diff line of a changed member list.
func changeLine(kind, name string, cur, want []string) string {
	add, rm := memberDelta(cur, want)
	var parts []string
	for _, m := range add {
		parts = append(parts, "+"+m)
	}
	for _, m := range rm {
		parts = append(parts, "-"+m)
	}
	return fmt.Sprintf("~ %s %s: %s", kind, name, TruncateList(parts, " ", 20))
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TruncateList joins at most n items and says how many it left out.
func TruncateList(items []string, sep string, n int) string {
	if len(items) <= n {
		return strings.Join(items, sep)
	}
	return fmt.Sprintf("%s%s… (%d more, %d in all)", strings.Join(items[:n], sep), sep, len(items)-n, len(items))
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// Undone lists the changes from base to cur that applying want over cur
// would undo, as diff lines of base → cur: base is the revision a file was
// exported at, want the file as edited since. A change is undone when want
// does not keep it: a setting changed since base that want sets back, an
// object created since base that want lacks or one deleted since that
// want has, a member added since base that want lacks or one removed
// since that want has. Changes want holds (the file's own, applied
// before, or merged in) are not listed.
func Undone(base, cur, want File) []string {
	var out []string
	setting := func(name string, b, c, w *bool) {
		if *b != *c && *w != *c {
			out = append(out, "~ settings: "+name+" "+onOff(*c))
		}
	}
	setting("default-zone", base.Settings.DefaultZone, cur.Settings.DefaultZone, want.Settings.DefaultZone)
	setting("hard-zoning", base.Settings.HardZoning, cur.Settings.HardZoning, want.Settings.HardZoning)
	named := func(kind string, base, cur, want map[string][]string) {
		names := sortedKeys(cur)
		for _, n := range sortedKeys(base) {
			if _, ok := cur[n]; !ok {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			b, inB := base[n]
			c, inC := cur[n]
			w, inW := want[n]
			switch {
			case !inB && !inW:
				out = append(out, fmt.Sprintf("+ %s %s: %s", kind, n, TruncateList(c, " ", 20)))
				continue
			case !inC && inW && inB:
				out = append(out, fmt.Sprintf("- %s %s (%d members)", kind, n, len(b)))
				continue
			case !inB || !inC:
				continue
			}
			has := map[string]bool{}
			for _, m := range w {
				has[m] = true
			}
			added, removed := memberDelta(b, c)
			var lost []string
			for _, m := range added {
				if !has[m] {
					lost = append(lost, "+"+m)
				}
			}
			for _, m := range removed {
				if has[m] {
					lost = append(lost, "-"+m)
				}
			}
			if len(lost) > 0 {
				out = append(out, fmt.Sprintf("~ %s %s: %s", kind, n, TruncateList(lost, " ", 20)))
			}
		}
	}
	named("alias", base.Aliases, cur.Aliases, want.Aliases)
	named("zone", base.Zones, cur.Zones, want.Zones)
	if want.Pins != nil {
		named("pin", base.Pins, cur.Pins, want.Pins)
	}
	return out
}

// After returns f with the edits applied in order, as the server applies
// them when they are valid (a dry run tells whether they are): for the
// member diff shown before a commit. f is not changed.
func After(f File, es []*inofv1.Edit) File {
	d, h := *f.Settings.DefaultZone, *f.Settings.HardZoning
	out := File{Settings: Settings{DefaultZone: &d, HardZoning: &h}, Aliases: map[string][]string{}, Zones: map[string][]string{}}
	for k, v := range f.Aliases {
		out.Aliases[k] = slices.Clone(v)
	}
	for k, v := range f.Zones {
		out.Zones[k] = slices.Clone(v)
	}
	if f.Pins != nil {
		out.Pins = map[string][]string{}
	}
	for k, v := range f.Pins {
		out.Pins[k] = slices.Clone(v)
	}
	add := func(m map[string][]string, name string, ms []string) {
		for _, x := range ms {
			if !slices.Contains(m[name], x) {
				m[name] = append(m[name], x)
			}
		}
	}
	remove := func(m map[string][]string, name string, ms []string) {
		m[name] = slices.DeleteFunc(m[name], func(x string) bool { return slices.Contains(ms, x) })
	}
	for _, e := range es {
		switch x := e.GetEdit().(type) {
		case *inofv1.Edit_CreateZone:
			out.Zones[x.CreateZone.GetName()] = slices.Clone(x.CreateZone.GetMembers())
		case *inofv1.Edit_DeleteZone:
			delete(out.Zones, x.DeleteZone.GetName())
		case *inofv1.Edit_RenameZone:
			out.Zones[x.RenameZone.GetNewName()] = out.Zones[x.RenameZone.GetName()]
			delete(out.Zones, x.RenameZone.GetName())
		case *inofv1.Edit_AddZoneMembers:
			add(out.Zones, x.AddZoneMembers.GetZone(), x.AddZoneMembers.GetMembers())
		case *inofv1.Edit_RemoveZoneMembers:
			remove(out.Zones, x.RemoveZoneMembers.GetZone(), x.RemoveZoneMembers.GetMembers())
		case *inofv1.Edit_CreateAlias:
			out.Aliases[x.CreateAlias.GetName()] = slices.Clone(x.CreateAlias.GetMembers())
		case *inofv1.Edit_DeleteAlias:
			delete(out.Aliases, x.DeleteAlias.GetName())
		case *inofv1.Edit_AddAliasMembers:
			add(out.Aliases, x.AddAliasMembers.GetAlias(), x.AddAliasMembers.GetMembers())
		case *inofv1.Edit_RemoveAliasMembers:
			remove(out.Aliases, x.RemoveAliasMembers.GetAlias(), x.RemoveAliasMembers.GetMembers())
		case *inofv1.Edit_SetPin:
			if out.Pins == nil {
				out.Pins = map[string][]string{}
			}
			out.Pins[x.SetPin.GetNqn()] = slices.Clone(x.SetPin.GetAt())
		case *inofv1.Edit_RemovePin:
			delete(out.Pins, x.RemovePin.GetNqn())
		case *inofv1.Edit_SetSettings:
			if s := x.SetSettings; s.DefaultZoneEnabled != nil {
				*out.Settings.DefaultZone = s.GetDefaultZoneEnabled()
			}
			if s := x.SetSettings; s.HardZoning != nil {
				*out.Settings.HardZoning = s.GetHardZoning()
			}
		}
	}
	return out
}
