package switchagent

import (
	"slices"
	"testing"
	"time"
)

// TestMembershipsMakeBeforeBreak: a zone no longer wanted keeps its
// membership for MembershipLinger (new ones are announced at once), one
// wanted again meanwhile is never withdrawn, and a failed withdrawal is
// tried again later.
func TestMembershipsMakeBeforeBreak(t *testing.T) {
	t0 := time.Unix(1000, 0)
	m := newMemberships()
	announce := func(zs []string, now time.Time) []string {
		add := m.want(zs, now)
		for _, z := range add {
			m.announced(z)
		}
		return add
	}
	if add := announce([]string{"b", "a", "a"}, t0); !slices.Equal(add, []string{"a", "b"}) {
		t.Fatalf("first want announced %v", add)
	}
	if _, ok := m.next(); ok {
		t.Fatal("a withdrawal is due with nothing dropped")
	}
	// An edit: b is no longer wanted, c is.
	if add := announce([]string{"a", "c"}, t0); !slices.Equal(add, []string{"c"}) {
		t.Fatalf("the edit announced %v", add)
	}
	if next, ok := m.next(); !ok || !next.Equal(t0.Add(MembershipLinger)) {
		t.Fatalf("next withdrawal at %v %v", next, ok)
	}
	if due := m.due(t0.Add(MembershipLinger - time.Nanosecond)); len(due) != 0 {
		t.Fatalf("withdrawn before the linger ended: %v", due)
	}
	if !m.held["b"] {
		t.Fatal("b's membership went at once")
	}
	// Wanting b and c again later changes nothing for b's schedule; c is
	// dropped, a stays.
	if add := announce([]string{"a", "b"}, t0.Add(time.Second)); len(add) != 0 {
		t.Fatalf("b wanted again was announced again: %v", add)
	}
	due := m.due(t0.Add(MembershipLinger + time.Second))
	if !slices.Equal(due, []string{"c"}) {
		t.Fatalf("due %v, want c only (b is wanted again)", due)
	}
	// The withdrawal of c fails: it is due again a linger later.
	m.retry("c", t0.Add(MembershipLinger+time.Second))
	if due := m.due(t0.Add(MembershipLinger + 2*time.Second)); len(due) != 0 {
		t.Fatalf("retried at once: %v", due)
	}
	now := t0.Add(2*MembershipLinger + time.Second)
	if due := m.due(now); !slices.Equal(due, []string{"c"}) {
		t.Fatalf("retry due %v", due)
	}
	m.withdrawn("c")
	if _, ok := m.next(); ok || m.held["c"] {
		t.Fatal("c still held or scheduled after its withdrawal")
	}
	if !m.held["a"] || !m.held["b"] {
		t.Fatalf("held %v", m.held)
	}
}
