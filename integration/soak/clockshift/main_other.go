//go:build !(linux && amd64)

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "clockshift: Linux on amd64 only")
	os.Exit(2)
}
