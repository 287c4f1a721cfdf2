// Package soak is a test suite: it runs a whole fabric in network
// namespaces (integration/topo: two reflectors, four leaves, probe hosts
// and targets, dual-homed ones among them, in several zones) under faults
// drawn at random from a seed — daemons killed and restarted, links and
// uplinks flapped, BGP partitions, loss and delay, zone edits on either
// reflector and on both at once, a reflector's clock stepped, its store on
// a nearly full file system, registrations, goodbyes, address changes and
// age-outs — and after every step compares what each probe host was told
// last about each target with an oracle: the zone rules (zones.Visible)
// over the ground truth the harness keeps (Model). The checker counts
// divergences, lost and duplicate notifications, unexpected reasons and
// cross-zone leaks. A run is reproducible from its seed (the schedule is a
// function of the seed alone); a divergence prints the seed, the step and
// the fabric's logs.
//
// The model, oracle, schedule and checker are plain code with unit tests;
// the fabric driver and the runs are privileged tests (TestPrivSoak and
// the regression scenarios). `make soak DURATION=30m SEED=…` runs a long
// one; `make test` runs a short one with a new seed. docs/testing.md,
// "Soak", says more.
package soak
