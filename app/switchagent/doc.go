// Package switchagent holds the logic of inofd's switch role: it turns the
// device records of the fabric and the zone rules into the notifications
// each host on this switch's access ports receives.
//
// The pure decision parts, free of I/O: Engine, and below it Local (the
// switch's own records), Targets (which merges the records that carry one
// target address) and Planner (which remembers what each local host was
// told and decides what to tell it next); the engine's own state is kept
// in parts with their methods: hostBook (planner.go: the local hosts, their
// ports and the Planner), zoneSubs (subscriptions.go), pinJudge (pins.go)
// and retirements. Agent runs them: its loop owns
// the engine and the state around it and carries the engine's decisions
// out through a fabric side (BGP toward the reflectors, or the zone store
// of direct mode) and a port side (the registration table, the access
// ports' readers and notifiers).
package switchagent
