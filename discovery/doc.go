// Package discovery is an NVMe/TCP discovery controller fed by the fabric:
// a host that runs plain `nvme discover` (or keeps a persistent discovery
// connection, `nvme discover -p`, nvme-stas) against a switch learns exactly
// the targets its zones let it see, and is told at once when that set
// changes.
//
// The package has three parts. The PDU codec (Decode, Encode, ReadPDU) is
// free of I/O policy and fuzzed. The Server accepts connections and runs
// one goroutine per connection (plus a reader) that owns the connection's
// controller state: ICReq/ICResp, Fabrics Connect to the well-known
// discovery NQN, Property Get/Set, Identify, Get Log Page 0x70, Keep
// Alive, Set/Get Features and Asynchronous Event Requests. The data comes
// from a Source (the switch agent implements it), so the controller knows
// nothing of BGP or zones. Client is a minimal host for tests and
// diagnostics. What is and is not implemented: docs/discovery.md.
package discovery
