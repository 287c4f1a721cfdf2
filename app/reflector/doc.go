// Package reflector is the logic of inofd --role reflector: a BGP route
// reflector for the switch agents (cluster-id, graceful restart, BFD,
// TCP-MD5 and GTSM as in docs/design.md §3) and the fabric's zone authority. It
// keeps the zone configuration in a bbolt store (zones.Store), originates
// every record as configuration parts under its own router-id
// (configsync, table.ConfigReplicator), adopts newer versions that other
// reflectors originate, persists them once complete, and withdraws the
// parts a record no longer has. A marker in the state directory tells a
// restart after a crash from one after a clean stop, so that the speaker
// restarts gracefully exactly when peers still hold its routes.
//
// The admin API (Commit, Config, Records, Problems, Neighbors, the lossless
// profile) is what the gRPC API wraps: API adapts it to api.Backend, with
// the devices the clients publish and the sessions, and the reflector
// publishes fabric events to the API's feed (Config.Events).
// docs/reflector.md is the operator's guide.
package reflector
