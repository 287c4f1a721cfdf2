// Package attack is a test suite: the attacks of docs/security.md made
// with real parts against a hardened fabric in network namespaces (TCP-MD5
// and GTSM on every session): a stock GoBGP speaker in place of a switch
// (wrong key, two hops away, then publishing configuration and other
// switches' records) and raw frames on the access ports. Privileged (build
// tag privileged, root).
package attack
