package lossless

import (
	"maps"
	"slices"
)

// sortedKeys returns the keys of m in ascending order.
func sortedKeys[V any](m map[uint8]V) []uint8 {
	return slices.Sorted(maps.Keys(m))
}
