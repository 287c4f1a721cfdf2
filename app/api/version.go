package api

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/internal/buildinfo"
)

// Version implements inofv1.FabricServer: the serving binary's build and
// role, the same on a reflector and on a switch agent.
func (s *statusAPI) Version(context.Context, *inofv1.VersionRequest) (*inofv1.VersionResponse, error) {
	return VersionResponse(buildinfo.Read(), s.role, s.started), nil
}

// VersionResponse is the API form of a build.
func VersionResponse(in buildinfo.Info, role string, started time.Time) *inofv1.VersionResponse {
	v := &inofv1.VersionResponse{Program: "inofd", Role: role, Version: in.Version, Revision: in.Revision,
		Modified: in.Modified, VcsTime: in.Time, GoVersion: in.GoVersion}
	if !started.IsZero() {
		v.Started = timestamppb.New(started)
	}
	return v
}
