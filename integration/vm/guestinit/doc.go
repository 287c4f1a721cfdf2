// Command guestinit is a harness tool: the init program that integration/vm
// builds into its guest image; nobody runs it by hand (docs/testing.md,
// "Where things live").
package main
