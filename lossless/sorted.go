package lossless

import (
	"maps"
	"slices"
)

// sortedKeys returns the keys of m in ascending order.
func sortedKeys(m map[uint8]uint8) []uint8 {
	return slices.Sorted(maps.Keys(m))
}
