package main

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"

	"github.com/openinof/inof/internal/sockdiag"
)

// sockkill SRC DST PORT aborts every TCP connection from SRC to DST:PORT
// (SOCK_DESTROY) and prints how many it aborted.
func sockkill(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: sockkill SRC DST PORT")
		return 2
	}
	src, err1 := netip.ParseAddr(args[0])
	dst, err2 := netip.ParseAddr(args[1])
	port, err3 := strconv.ParseUint(args[2], 10, 16)
	if err1 != nil || err2 != nil || err3 != nil {
		fmt.Fprintln(os.Stderr, "sockkill: want two IP addresses and a port")
		return 2
	}
	n, err := sockdiag.Destroy(src, dst, uint16(port))
	fmt.Printf("sockkill: %d connections aborted\n", n)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
