package main

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/openinof/inof/internal/sockdiag"
)

// sockkill [-syn] SRC DST PORT aborts every TCP connection from SRC to
// DST:PORT (SOCK_DESTROY), with -syn only the connects still waiting for
// an answer (SYN_SENT), and prints how many it aborted and how long that
// took.
func sockkill(args []string) int {
	destroy := sockdiag.Destroy
	if len(args) > 0 && args[0] == "-syn" {
		destroy, args = sockdiag.DestroyConnecting, args[1:]
	}
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: sockkill [-syn] SRC DST PORT")
		return 2
	}
	src, err1 := netip.ParseAddr(args[0])
	dst, err2 := netip.ParseAddr(args[1])
	port, err3 := strconv.ParseUint(args[2], 10, 16)
	if err1 != nil || err2 != nil || err3 != nil {
		fmt.Fprintln(os.Stderr, "sockkill: want two IP addresses and a port")
		return 2
	}
	start := time.Now()
	n, err := destroy(src, dst, uint16(port))
	fmt.Printf("sockkill: %d connections aborted in %s\n", n, time.Since(start).Round(time.Microsecond))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
