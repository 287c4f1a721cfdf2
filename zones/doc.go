// Package zones holds the zoning model (zones, members, aliases, the default
// zone, fabric settings), the visibility rules that say which host may see
// which target, an index that answers them in time proportional to the
// answer, the per-host diff between two configurations, the replication
// records (split into parts when large) and the crash-safe bbolt store with
// the merge that lets every reflector take writes.
package zones
