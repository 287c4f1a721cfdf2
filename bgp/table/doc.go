// Package table keeps the records a node publishes and holds over a BGP
// speaker: DevicePublisher and SetPublisher publish a switch's devices
// (moving them between zones without ghosts), DeviceTable and ConfigView
// hold what was received, ConfigReplicator replicates configuration
// between reflectors, and Origins/Refusals judge who may originate what.
// It uses the speaker (package bgp) only through its exported interface.
package table
