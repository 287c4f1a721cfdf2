package api

import (
	"time"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// server implements inofv1.FabricServer on a Backend. It is made of parts,
// one per concern, each holding only what its calls need (the Backend, the
// event Feed, the admin check) and implementing them; embedding promotes
// their methods. Each call is a method of exactly one part: a second one
// would make it ambiguous and server would no longer be a FabricServer.
type server struct {
	unimplemented
	*zoningAPI       // the configuration and its edits (zoning.go)
	*visibilityAPI   // who sees whom and why, where a member is used (why.go)
	*devicesAPI      // the registered devices (devices.go, reports.go)
	*journalAPI      // history, older revisions, backups (journal.go)
	*statusAPI       // sessions, reflectors, version (sessions.go, reflectors.go, version.go)
	*eventsAPI       // the event feed (watch.go)
	*losslessAPI     // the lossless profile (lossless.go)
	*recordFormatAPI // the record format (recordformat.go)
}

// unimplemented answers UNIMPLEMENTED for a call of a newer proto that no
// part implements. Its methods are promoted from one level deeper than the
// parts' own, so a part's method always wins over its stub.
type unimplemented struct {
	inofv1.UnimplementedFabricServer
}

// newServer makes the server of b as o says (with NewServer's defaults: a
// Logger and an Events feed); closing is closed when the server shuts down.
func newServer(b Backend, o ServeOptions, closing <-chan struct{}) *server {
	admin := adminCheck{log: o.Logger, events: o.Events}
	vis := &visibilityAPI{b: b, log: o.Logger}
	return &server{
		zoningAPI:     &zoningAPI{b: b, readOnly: o.ReadOnly, admin: admin, events: o.Events, log: o.Logger},
		visibilityAPI: vis,
		devicesAPI:    &devicesAPI{b: b, vis: vis, events: o.Events, log: o.Logger},
		journalAPI:    &journalAPI{b: b, admin: admin, events: o.Events, log: o.Logger},
		statusAPI:     &statusAPI{b: b, events: o.Events, role: o.Role, started: time.Now()},
		eventsAPI:     &eventsAPI{events: o.Events, closing: closing},
		losslessAPI:   &losslessAPI{b: b, readOnly: o.ReadOnly, admin: admin, events: o.Events, log: o.Logger},
		recordFormatAPI: &recordFormatAPI{b: b, readOnly: o.ReadOnly, admin: admin, events: o.Events,
			log: o.Logger},
	}
}
