// Package switchagent holds the logic of inofd's switch role: it turns the
// device records of the fabric and the zone rules into the notifications
// each host on this switch's access ports receives.
//
// This file set holds the pure decision parts, free of I/O: Targets merges
// the records that carry one target address, and Planner remembers what each
// local host was told and decides what to tell it next. The daemon feeds
// them from one goroutine.
package switchagent
