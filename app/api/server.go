package api

import (
	"log/slog"
	"time"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// server implements inofv1.FabricServer on a Backend.
type server struct {
	inofv1.UnimplementedFabricServer
	b        Backend
	events   *Feed
	readOnly bool
	log      *slog.Logger
	closing  <-chan struct{} // closed when the server shuts down
	role     string          // what Version reports
	started  time.Time       // when the server was made
}
