package cli

import (
	"bytes"
	"testing"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// TestRowEscapesControlCharacters: a cell holding a terminal escape, a tab
// or bytes that are not UTF-8 (an NQN a device sent) is printed escaped.
func TestRowEscapesControlCharacters(t *testing.T) {
	var b bytes.Buffer
	row(&b, "10.0.0.1", "nqn.2014-08.org.example:\x1b[2J\tx\xff", "")
	if got, want := b.String(), "10.0.0.1\tnqn.2014-08.org.example:\\x1b[2J\\tx\\xff\t-\n"; got != want {
		t.Errorf("row = %q, want %q", got, want)
	}
}

// An event line leaves out the attributes its message or subject already
// says, empty and "none" ones, and identity "fabric".
func TestEventTextRepeatsNothing(t *testing.T) {
	e := &inofv1.Event{Kind: "record", Subject: "10.0.1.2",
		Message: "device joined: target 10.0.1.2/roce on switch 192.0.2.2 port Ethernet8, active",
		Attributes: map[string]string{"switch": "192.0.2.2", "role": "target", "state": "active", "reason": "none",
			"port": "Ethernet8", "protocol": "roce", "identity": "fabric", "nqn": "nqn.2014-08.org.example:x", "addr": "10.0.1.2",
			"peer": "192.0.2.22"}}
	if got, want := eventText(e), e.GetMessage()+" [nqn=nqn.2014-08.org.example:x peer=192.0.2.22]"; got != want {
		t.Errorf("eventText = %q, want %q", got, want)
	}
	e = &inofv1.Event{Kind: "zoning", Message: "committed", Attributes: map[string]string{"identity": "user:alice"}}
	if got, want := eventText(e), "committed [identity=user:alice]"; got != want {
		t.Errorf("eventText = %q, want %q", got, want)
	}
}
