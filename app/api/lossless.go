package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/lossless"
)

// losslessAPI takes the calls on the fabric's lossless profile: reading,
// checking and rendering it, and replacing it (an admin's, and refused on
// a read-only API).
type losslessAPI struct {
	b        Backend
	readOnly bool
	admin    adminCheck
	events   *Feed // changes are published here
	log      *slog.Logger
}

// GetLosslessProfile returns the fabric's profile as YAML.
func (s *losslessAPI) GetLosslessProfile(ctx context.Context, _ *inofv1.GetLosslessProfileRequest) (*inofv1.LosslessProfile, error) {
	p, err := s.b.LosslessProfile(ctx)
	if err != nil {
		return nil, statusOf(fmt.Errorf("lossless profile: %w", err))
	}
	y, err := p.YAML()
	if err != nil {
		return nil, statusOf(err)
	}
	return &inofv1.LosslessProfile{Yaml: string(y)}, nil
}

// SetLosslessProfile validates the profile and hands it to the backend; an
// invalid profile is refused with every problem in the message.
func (s *losslessAPI) SetLosslessProfile(ctx context.Context, req *inofv1.SetLosslessProfileRequest) (*inofv1.LosslessProfile, error) {
	if s.readOnly {
		return nil, status.Error(codes.PermissionDenied, "this API is read-only (inofd --role switch); set the profile on a reflector")
	}
	if err := s.admin.require(ctx, "lossless profile change"); err != nil {
		return nil, err
	}
	p, err := parseProfile(req.GetYaml())
	if err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := s.b.SetLosslessProfile(ctx, p); err != nil {
		return nil, statusOf(fmt.Errorf("set lossless profile: %w", err))
	}
	id := IdentityFrom(ctx)
	s.events.Publish(Event{Kind: "lossless", Subject: p.Name, Message: fmt.Sprintf("%s replaced the lossless profile", id),
		Attributes: map[string]string{"identity": id.String()}})
	s.log.Info("api: lossless profile replaced", "identity", id.String(), "via", id.Via, "profile", p.Name)
	return s.GetLosslessProfile(ctx, nil)
}

// ValidateLosslessProfile lists the problems of a profile (the fabric's
// when the request has none).
func (s *losslessAPI) ValidateLosslessProfile(ctx context.Context, req *inofv1.ValidateLosslessProfileRequest) (*inofv1.ValidateLosslessProfileResponse, error) {
	p, err := s.profileOf(ctx, req.GetYaml())
	if err != nil {
		return nil, err
	}
	out := &inofv1.ValidateLosslessProfileResponse{}
	var ps lossless.Problems
	if err := p.Validate(); errors.As(err, &ps) {
		for _, x := range ps {
			out.Problems = append(out.Problems, &inofv1.Problem{Field: x.Field, Value: x.Value, Rule: x.Rule, Detail: x.Detail, Fix: x.Fix})
		}
	} else if err != nil {
		return nil, statusOf(err)
	}
	return out, nil
}

// RenderLosslessProfile renders a profile (the fabric's when the request
// has none) for one target.
func (s *losslessAPI) RenderLosslessProfile(ctx context.Context, req *inofv1.RenderLosslessProfileRequest) (*inofv1.RenderLosslessProfileResponse, error) {
	if !slices.Contains(lossless.Targets(), req.GetTarget()) {
		return nil, status.Errorf(codes.InvalidArgument, "render target %q: want one of %s", req.GetTarget(), strings.Join(lossless.Targets(), ", "))
	}
	p, err := s.profileOf(ctx, req.GetYaml())
	if err != nil {
		return nil, err
	}
	text, err := lossless.Render(p, req.GetTarget())
	if err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	return &inofv1.RenderLosslessProfileResponse{Text: string(text)}, nil
}

// profileOf parses y, or returns the fabric's profile when y is empty.
func (s *losslessAPI) profileOf(ctx context.Context, y string) (lossless.Profile, error) {
	if y != "" {
		return parseProfile(y)
	}
	p, err := s.b.LosslessProfile(ctx)
	if err != nil {
		return lossless.Profile{}, statusOf(fmt.Errorf("lossless profile: %w", err))
	}
	return p, nil
}

func parseProfile(y string) (lossless.Profile, error) {
	if strings.TrimSpace(y) == "" {
		return lossless.Profile{}, status.Error(codes.InvalidArgument, "empty lossless profile")
	}
	p, err := lossless.ParseYAML([]byte(y))
	if err != nil {
		return lossless.Profile{}, status.Error(codes.InvalidArgument, err.Error())
	}
	return p, nil
}
