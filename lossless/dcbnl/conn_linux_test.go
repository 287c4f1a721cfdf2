//go:build linux

package dcbnl

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// The kernel parses our request: it finds no such device (ENODEV), or says
// loopback has no DCB operations (EOPNOTSUPP). A kernel without CONFIG_DCB
// answers EOPNOTSUPP to both; then the test cannot tell and skips.
func TestGetAgainstKernel(t *testing.T) {
	c, err := Dial()
	if err != nil {
		t.Skipf("no rtnetlink here: %v", err)
	}
	defer c.Close()
	_, err = c.Get("inofnodev0")
	if errors.Is(err, unix.EOPNOTSUPP) {
		t.Skip("kernel without DCB netlink (CONFIG_DCB)")
	}
	if !errors.Is(err, unix.ENODEV) {
		t.Fatalf("Get(missing device) = %v, want ENODEV", err)
	}
	if _, err := c.Get("lo"); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("Get(lo) = %v, want EOPNOTSUPP (no DCB ops)", err)
	}
}
