// Package l2proto speaks the host↔switch protocol of nvme-snsd, byte for byte:
// LLDP registration (org TLV 00-18-82/101), 0x88A7 notifications, ACKs and zone
// queries. Codecs are transport-free (MarshalBinary/UnmarshalBinary, and a
// Decoder that decodes received frames without allocating); a Link
// moves Ethernet frames on one port (AF_PACKET or in memory); the Notifier
// delivers notifications reliably, windowed per host and paced below
// nvme-snsd's flood guard; the Registry tracks registrations, bounded, and
// delivers their changes from its own goroutine; the LinkWatcher reports
// carrier changes; a SwitchPort ties them to one access port.
package l2proto
