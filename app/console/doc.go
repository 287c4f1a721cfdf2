// Package console is the reflector's read-only web console (docs/console.md):
// server-rendered pages (html/template, assets embedded, no script needed)
// of the fabric, zones, devices, events, the lossless profile and the
// zoning history, and live parts over Server-Sent Events fed by the event
// feed.
//
// It calls the API's own implementation in-process (the
// inofv1.FabricServer that app/api serves over gRPC), with the identity of
// each request in its context, so every page shows what inofctl shows and
// a viewer is refused what a viewer is refused there. The console itself
// writes nothing: every method but GET and HEAD is refused. app/api serves
// it on its HTTPS listener (api.console_listen) behind the API's TLS and
// identities; cmd/inofd mounts it on a reflector.
package console
