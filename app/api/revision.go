package api

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"sort"

	"github.com/openinof/inof/zones"
)

// Revision identifies a zoning configuration by its content: settings,
// zones and aliases with their members in order, pins with their ports. Two configurations have
// the same revision exactly when they hold the same content (up to the
// hash), so a client that edits against revision R knows its view is still
// current when the store's revision is still R, whoever committed or merged
// in between.
func Revision(c *zones.Config) string {
	h := fnv.New64a()
	write := func(s string) {
		h.Write(binary.AppendUvarint(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	write(fmt.Sprint(c.Settings.DefaultZoneEnabled, c.Settings.HardZoning))
	list := func(kind string, names []string, members func(string) []zones.Member) {
		for _, n := range names {
			write(kind)
			write(n)
			ms := members(n)
			write(fmt.Sprint(len(ms)))
			for _, m := range ms {
				write(m.String())
			}
		}
	}
	list("zone", c.ZoneNames(), func(n string) []zones.Member { return c.Zones[n].Members })
	list("alias", aliasNames(c), func(n string) []zones.Member { return c.Aliases[n].Members })
	for _, n := range c.PinNQNs() { // nothing without pins: revisions from before them stand
		write("pin")
		write(n)
		at := c.Pins[n].At
		write(fmt.Sprint(len(at)))
		for _, l := range at {
			write(l.String())
		}
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// aliasNames returns the alias names of c, sorted.
func aliasNames(c *zones.Config) []string {
	names := make([]string, 0, len(c.Aliases))
	for n := range c.Aliases {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
