// Command linked prints its build's --version line (TestLinkerFlags).
package main

import (
	"fmt"

	"github.com/openinof/inof/internal/buildinfo"
)

func main() { fmt.Print(buildinfo.Read().Line("x")) }
