package cli

import (
	"bytes"
	"testing"
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
