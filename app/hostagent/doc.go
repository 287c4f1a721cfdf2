// Package hostagent is the logic of inof-host, the agent on a server or
// storage array. It registers each configured interface with the switch the
// way nvme-snsd does (LLDPDU every 30 s, TTL 120 s, a zone query at start and
// after link up), ACKs the switch's notifications (deduplicating
// retransmits), and turns them into NVMe-oF connects and disconnects through
// nvme-cli: connect on active, disconnect on inactive when the reason forces
// it, with a restrain time against flaps. It never connects twice to a live
// controller and remembers, in a crash-safe state file, the controllers it
// created, so it only ever removes its own.
//
// Goroutines: one reader and one announcer per interface, and one worker
// that owns the NVMe state and runs nvme-cli. Readers ACK at once and pass
// new notifications to the worker over a bounded channel.
package hostagent
