package api_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/app/api"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/lossless"
)

func TestLosslessProfile(t *testing.T) {
	b, c := fabric(t, api.ServeOptions{})
	ctx := context.Background()
	got, err := c.GetLosslessProfile(ctx, &inofv1.GetLosslessProfileRequest{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := lossless.ParseYAML([]byte(got.GetYaml()))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := c.ValidateLosslessProfile(ctx, &inofv1.ValidateLosslessProfileRequest{}); err != nil || len(v.GetProblems()) != 0 {
		t.Fatalf("validate the default profile: %v %v", v, err)
	}

	p.Name = "changed"
	y, err := p.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetLosslessProfile(ctx, &inofv1.SetLosslessProfileRequest{Yaml: string(y)}); err != nil {
		t.Fatal(err)
	}
	if cur, _ := b.LosslessProfile(ctx); cur.Name != "changed" {
		t.Errorf("backend profile %q after set", cur.Name)
	}

	bad := p
	bad.LosslessPriorities = []uint8{9}
	by, err := bad.YAML()
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.ValidateLosslessProfile(ctx, &inofv1.ValidateLosslessProfileRequest{Yaml: string(by)})
	if err != nil || len(v.GetProblems()) == 0 || v.GetProblems()[0].GetField() == "" {
		t.Fatalf("validate a profile with priority 9: %v %v", v, err)
	}
	_, err = c.SetLosslessProfile(ctx, &inofv1.SetLosslessProfileRequest{Yaml: string(by)})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "lossless_priorities") {
		t.Errorf("set an invalid profile: %v", err)
	}
	if cur, _ := b.LosslessProfile(ctx); cur.Name != "changed" {
		t.Errorf("an invalid profile replaced the profile")
	}
	_, err = c.SetLosslessProfile(ctx, &inofv1.SetLosslessProfileRequest{Yaml: "name: x\nbogus_key: 1\n"})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("set a profile with an unknown key: %v", err)
	}

	r, err := c.RenderLosslessProfile(ctx, &inofv1.RenderLosslessProfileRequest{Target: lossless.TargetTable})
	want, werr := lossless.Render(p, lossless.TargetTable)
	if err != nil || werr != nil || r.GetText() != string(want) {
		t.Errorf("render table: %v %v", err, werr)
	}
	if _, err := c.RenderLosslessProfile(ctx, &inofv1.RenderLosslessProfileRequest{Target: "cisco"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("render for an unknown target: %v", err)
	}
}
