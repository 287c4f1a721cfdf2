// Package zones holds the zoning model (zones, members, aliases, the default
// zone, fabric settings), the visibility rules that say which host may see
// which target, the diff between two configurations, and the crash-safe bbolt
// store with the replication merge that lets every reflector take writes.
package zones
