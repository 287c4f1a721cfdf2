package inof

import "testing"

func TestRoleComplements(t *testing.T) {
	cases := []struct {
		a, b Role
		want bool
	}{
		{RoleHost, RoleTarget, true},
		{RoleTarget, RoleHost, true},
		{RoleHost, RoleHost, false},
		{RoleTarget, RoleTarget, false},
		{RoleBoth, RoleHost, true},
		{RoleBoth, RoleTarget, true},
		{RoleBoth, RoleBoth, true},
		{RoleUnknown, RoleTarget, false},
	}
	for _, c := range cases {
		if got := c.a.Complements(c.b); got != c.want {
			t.Errorf("%s.Complements(%s) = %v", c.a, c.b, got)
		}
	}
}

func TestStrings(t *testing.T) {
	for v, want := range map[string]string{
		RoleBoth.String(): "both", Role(9).String(): "role(9)",
		ProtocolTCP.String(): "tcp", Protocol(7).String(): "protocol(7)",
		StateActive.String(): "active", State(4).String(): "state(4)",
		ReasonBFDDown.String(): "bfd-down", Reason(42).String(): "reason(42)",
	} {
		if v != want {
			t.Errorf("got %q, want %q", v, want)
		}
	}
	if !ReasonZoneChange.Forced() || ReasonLinkDown.Forced() {
		t.Error("Forced")
	}
}
