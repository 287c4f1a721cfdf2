package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	inofv1 "github.com/openinof/inof/inof/api/v1"
)

// zoningFile is the declarative form of a whole zoning configuration
// (`inofctl zoning export`, `zoning apply -f`): settings, aliases and zones
// with their members, names sorted, so that it diffs well in git.
type zoningFile struct {
	Settings fileSettings        `yaml:"settings"`
	Aliases  map[string][]string `yaml:"aliases"`
	Zones    map[string][]string `yaml:"zones"`
}

type fileSettings struct {
	DefaultZone *bool `yaml:"default_zone"`
	HardZoning  *bool `yaml:"hard_zoning"`
}

// fileOf turns a configuration from the API into its file form.
func fileOf(z *inofv1.Zoning) zoningFile {
	d, h := z.GetSettings().GetDefaultZoneEnabled(), z.GetSettings().GetHardZoning()
	f := zoningFile{Settings: fileSettings{DefaultZone: &d, HardZoning: &h},
		Aliases: map[string][]string{}, Zones: map[string][]string{}}
	for _, x := range z.GetAliases() {
		f.Aliases[x.GetName()] = append([]string{}, x.GetMembers()...)
	}
	for _, x := range z.GetZones() {
		f.Zones[x.GetName()] = append([]string{}, x.GetMembers()...)
	}
	return f
}

// encodeFile writes f as YAML with a header naming its revision.
func encodeFile(w io.Writer, f zoningFile, revision string) error {
	fmt.Fprintf(w, "# inofctl zoning export: revision %s\n# Edit, review, then: inofctl zoning apply -f FILE\n", revision)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	return enc.Close()
}

// readZoningFile reads a zoning file ("-": standard input). Unknown keys
// are errors (a typo must not silently mean "no zones").
func readZoningFile(path string, stdin io.Reader) (zoningFile, error) {
	var r io.Reader = stdin
	if path != "-" {
		fh, err := os.Open(path)
		if err != nil {
			return zoningFile{}, fmt.Errorf("zoning file: %w", err)
		}
		defer fh.Close()
		r = fh
	}
	var f zoningFile
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return zoningFile{}, fmt.Errorf("zoning file %s is empty", path)
		}
		return zoningFile{}, fmt.Errorf("zoning file %s: %w", path, err)
	}
	if f.Settings.DefaultZone == nil || f.Settings.HardZoning == nil {
		return zoningFile{}, fmt.Errorf("zoning file %s: settings.default_zone and settings.hard_zoning must be set (inofctl zoning export writes them)", path)
	}
	return f, nil
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

// plan is what turns one configuration into another: the edits (one
// transaction) and the member diff shown before them.
type plan struct {
	edits []*inofv1.Edit
	diff  []string // "+ zone web", "~ zone web: +10.0.0.3 -10.0.0.1", …
}

// planFor computes the edits from cur to want. A zone or alias whose
// members differ as a set is written anew with want's members in want's
// order (delete and create in one transaction: one record, no tombstone),
// so a rollback restores the exact revision; a list that differs only in
// order is left alone, so applying a file twice changes nothing.
func planFor(cur zoningFile, want zoningFile) plan {
	var p plan
	if *cur.Settings.DefaultZone != *want.Settings.DefaultZone || *cur.Settings.HardZoning != *want.Settings.HardZoning {
		s := &inofv1.SetSettings{}
		if *cur.Settings.DefaultZone != *want.Settings.DefaultZone {
			s.DefaultZoneEnabled = want.Settings.DefaultZone
			p.diff = append(p.diff, "~ settings: default-zone "+onOff(*want.Settings.DefaultZone))
		}
		if *cur.Settings.HardZoning != *want.Settings.HardZoning {
			s.HardZoning = want.Settings.HardZoning
			p.diff = append(p.diff, "~ settings: hard-zoning "+onOff(*want.Settings.HardZoning))
		}
		p.edits = append(p.edits, &inofv1.Edit{Edit: &inofv1.Edit_SetSettings{SetSettings: s}})
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
	p.diff = append(append(p.diff, aliases.diff...), zs.diff...)
	p.edits = append(append(append(append(p.edits, aliases.write...), zs.write...), zs.drop...), aliases.drop...)
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
			p.diff = append(p.diff, fmt.Sprintf("+ %s %s: %s", kind, n, truncateList(want[n], " ", 20)))
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
	return fmt.Sprintf("~ %s %s: %s", kind, name, truncateList(parts, " ", 20))
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// truncateList joins at most n items and says how many it left out.
func truncateList(items []string, sep string, n int) string {
	if len(items) <= n {
		return strings.Join(items, sep)
	}
	return fmt.Sprintf("%s%s… (%d more, %d in all)", strings.Join(items[:n], sep), sep, len(items)-n, len(items))
}

// printPlan shows the member diff.
func printPlan(w io.Writer, p plan) {
	fmt.Fprintf(w, "%d zoning change(s):\n", len(p.diff))
	for _, l := range p.diff {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// applyPlan shows the member diff and the access diff (a dry run), asks
// (unless yes), and commits the plan at the revision it was made against.
func (a *app) applyPlan(ctx context.Context, c inofv1.FabricClient, p plan, rev, action string, yes bool) error {
	printPlan(a.io.Err, p)
	warnCatchAll(a.io.Err, p.edits)
	return a.commitAs(ctx, c, p.edits, rev, action, yes, true)
}
