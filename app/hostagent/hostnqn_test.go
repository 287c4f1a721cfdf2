package hostagent

import (
	"log/slog"
	"testing"

	"github.com/openinof/inof/l2proto"
)

// TestHostAnnouncesHostNQN: a host interface without its own nqn registers
// with the host NQN, so NQN zoning of a host works without repeating it;
// an interface's own nqn, and targets, keep theirs.
func TestHostAnnouncesHostNQN(t *testing.T) {
	o := testOptions(t)
	o.Interfaces = append(o.Interfaces,
		InterfaceOptions{Name: "eth1", Role: "host", Protocol: "tcp", Address: "10.0.1.2", NQN: "nqn.2014-08.org.example:own"},
		InterfaceOptions{Name: "eth2", Role: "target", Protocol: "tcp", Address: "10.0.2.2", NQN: subNQN})
	links := map[string]l2proto.Link{}
	for _, it := range o.Interfaces {
		a, _ := l2proto.NewMemPair(it.Name, hostMAC, "sw-"+it.Name, swMAC)
		links[it.Name] = a
	}
	a, err := New(Config{Options: o, Links: links, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range a.ports {
			p.link.Close()
		}
	})
	want := []string{hostNQN, "nqn.2014-08.org.example:own", subNQN}
	for i, p := range a.ports {
		if p.dev.NQN != want[i] {
			t.Errorf("%s announces %q, want %q", p.name, p.dev.NQN, want[i])
		}
	}
}
