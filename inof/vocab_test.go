package inof

import (
	"bytes"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
)

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

// TestDeviceString: the text a log line and an error show for a device,
// and the log attribute is the same text in both formats.
func TestDeviceString(t *testing.T) {
	for _, c := range []struct {
		d    Device
		want string
	}{
		{Device{Addr: netip.MustParseAddr("10.0.0.1"), Role: RoleTarget, Protocol: ProtocolTCP}, "target 10.0.0.1/tcp"},
		{Device{Addr: netip.MustParseAddr("fd00::2"), Role: RoleHost, Protocol: ProtocolRoCE, Port: 4421, NQN: "nqn.2014-08.org.example:h"},
			"host fd00::2/roce:4421 nqn.2014-08.org.example:h"},
		{Device{}, "unknown invalid IP/unknown"},
	} {
		if got := c.d.String(); got != c.want {
			t.Errorf("%#v: %q, want %q", c.d, got, c.want)
		}
		var text, js bytes.Buffer
		slog.New(slog.NewTextHandler(&text, nil)).Info("x", "device", c.d)
		slog.New(slog.NewJSONHandler(&js, nil)).Info("x", "device", c.d)
		if q := `device="` + c.want + `"`; !strings.Contains(text.String(), q) {
			t.Errorf("text line %q lacks %s", text.String(), q)
		}
		if q := `"device":"` + c.want + `"`; !strings.Contains(js.String(), q) {
			t.Errorf("JSON line %q lacks %s", js.String(), q)
		}
	}
}
