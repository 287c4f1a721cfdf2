package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// RecordFormatBackend is served beside Backend by a backend that holds the
// fabric's record format (the reflector's; docs/records.md, "Rolling
// upgrade"). A backend without it answers the record-format calls with
// UNIMPLEMENTED.
type RecordFormatBackend interface {
	// RecordFormat returns the format in force and what each configured
	// switch announced it reads.
	RecordFormat(ctx context.Context) (RecordFormatStatus, error)
	// SetRecordFormat changes the format (a name of record.Formats);
	// an error wrapping ErrFormatRefused names the switches behind.
	SetRecordFormat(ctx context.Context, format string) error
}

// ErrFormatRefused: the record format was not changed because some switch
// cannot read it (FAILED_PRECONDITION).
var ErrFormatRefused = errors.New("record format refused")

// RecordFormatStatus is the fabric's record format.
type RecordFormatStatus struct {
	Format   string // "per-device" or "sets"
	Switches []SwitchReads
}

// SwitchReads is what one configured switch announced it reads.
type SwitchReads struct {
	Switch    string // router-id
	Announced bool   // its switch record was received
	ReadsSets bool
}

// recordFormatAPI takes the calls on a RecordFormatBackend's record
// format: reading it and changing it (an admin's, and refused on a
// read-only API).
type recordFormatAPI struct {
	b        Backend
	readOnly bool
	admin    adminCheck
	events   *Feed // changes are published here
	log      *slog.Logger
}

func (s *recordFormatAPI) formatBackend() (RecordFormatBackend, error) {
	fb, ok := s.b.(RecordFormatBackend)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "this daemon holds no record format (ask a reflector)")
	}
	return fb, nil
}

// GetRecordFormat returns the fabric's record format.
func (s *recordFormatAPI) GetRecordFormat(ctx context.Context, _ *inofv1.GetRecordFormatRequest) (*inofv1.RecordFormat, error) {
	fb, err := s.formatBackend()
	if err != nil {
		return nil, err
	}
	st, err := fb.RecordFormat(ctx)
	if err != nil {
		return nil, statusOf(fmt.Errorf("record format: %w", err))
	}
	out := &inofv1.RecordFormat{Format: st.Format}
	for _, sw := range st.Switches {
		out.Switches = append(out.Switches, &inofv1.SwitchReads{Switch: sw.Switch, Announced: sw.Announced, ReadsSets: sw.ReadsSets})
	}
	return out, nil
}

// SetRecordFormat changes the fabric's record format (admins only).
func (s *recordFormatAPI) SetRecordFormat(ctx context.Context, req *inofv1.SetRecordFormatRequest) (*inofv1.RecordFormat, error) {
	if s.readOnly {
		return nil, status.Error(codes.PermissionDenied, "this API is read-only (inofd --role switch); set the record format on a reflector")
	}
	if err := s.admin.require(ctx, "record format change"); err != nil {
		return nil, err
	}
	fb, err := s.formatBackend()
	if err != nil {
		return nil, err
	}
	if err := fb.SetRecordFormat(ctx, req.GetFormat()); err != nil {
		if errors.Is(err, ErrFormatRefused) {
			return nil, status.Error(codes.FailedPrecondition, err.Error())
		}
		return nil, statusOf(fmt.Errorf("set record format: %w", err))
	}
	id := IdentityFrom(ctx)
	s.events.Publish(Event{Kind: "fabric", Subject: "record-format", Message: fmt.Sprintf("%s set the record format to %s", id, req.GetFormat()),
		Attributes: map[string]string{"identity": id.String(), "format": req.GetFormat()}})
	s.log.Info("api: record format set", "identity", id.String(), "via", id.Via, "format", req.GetFormat())
	return s.GetRecordFormat(ctx, nil)
}
