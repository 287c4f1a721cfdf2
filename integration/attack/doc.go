// Package attack is a test suite: the attacks of docs/security.md made
// with real parts against a hardened fabric in network namespaces (TCP-MD5
// and GTSM on every session): a stock GoBGP speaker in place of a switch
// (wrong key, two hops away, then publishing configuration and other
// switches' records) and raw frames on the access ports (TestPrivAttacks);
// and what a device or an unauthenticated client can send: hostile NQNs,
// discovery from the management side, floods of idle connections and
// huge requests (TestPrivHostileDevices). Privileged (build tag
// privileged, root).
package attack
