// Package bfd implements single-hop asynchronous Bidirectional Forwarding
// Detection (RFC 5880, RFC 5881) over UDP port 3784 for IPv4: the control
// packet codec, the session state machine with timer negotiation, Poll/Final
// and jitter, and a Manager that runs many sessions over sockets shared per
// local address, sending and receiving in batches (sendmmsg, recvmmsg). Subscribers hear state changes from goroutines of their own,
// coalesced per session when they fall behind (Manager.Subscribe). The bgp
// package ties sessions to BGP neighbors.
package bfd
