package reason

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

var (
	errA = errors.New("a")
	errB = errors.New("b")
)

func TestOf(t *testing.T) {
	tab := Table{{errA, "a"}, {errB, "b"}}
	for _, c := range []struct {
		err  error
		want string
	}{
		{errA, "a"},
		{fmt.Errorf("decoding: %w: 3 bytes", errB), "b"},
		{errors.Join(errors.New("x"), errA), "a"},
		{errors.New("a"), Other}, // the same text is not the same error
		{nil, Other},
	} {
		if got := tab.Of(c.err); got != c.want {
			t.Errorf("Of(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if got := tab.Of(fmt.Errorf("%w and %w", errB, errA)); got != "a" {
		t.Errorf("an error wrapping two: %q, want the first in the table, a", got)
	}
}

func TestNames(t *testing.T) {
	tab := Table{{errA, "a"}, {errB, "b"}}
	if got := tab.Names(); !slices.Equal(got, []string{"a", "b", Other}) {
		t.Errorf("Names() = %v", got)
	}
	if got := tab.Names("unexpected"); !slices.Equal(got, []string{"a", "b", "unexpected", Other}) {
		t.Errorf("Names(unexpected) = %v", got)
	}
}
