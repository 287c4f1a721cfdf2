// Command mkimage is a harness tool: `make lab-image` runs it to build the
// containerlab lab's image (docs/testing.md, "Where things live").
package main
