// Package api serves the iNOF admin API: the protobuf service
// inof.v1.Fabric (proto/inof/v1/inof.proto; generated code in package
// inofv1, rebuilt by `make generate` without protoc) on top of a Backend
// that the reflector implements (a switch agent serves it read-only).
//
// Zoning edits are single-shot: ApplyZoning stages a list of edits on one
// store transaction and commits it only if the configuration still has the
// revision (a content hash, Revision) the client saw; a dry run of the same
// edits returns the visibility changes they cause. No transaction outlives
// a call, so nothing is shared between goroutines or left behind by a
// client that goes away.
//
// Serving: a unix socket of mode 0600 (no token: the file mode is the
// access control) and, optionally, TCP with TLS and a bearer token read
// from a file; a TCP listener without both is refused at start. Both carry
// the gRPC health service and server reflection. inofd wires it as
//
//	feed := api.NewFeed(api.FeedOptions{})
//	// publish registrations, records, notifications and session changes
//	// with feed.Publish from the components' own goroutines
//	err := api.Serve(ctx, api.ServeOptions{Socket: api.DefaultSocket, Events: feed, Logger: log}, backend)
package api
