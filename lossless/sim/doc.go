// Package sim checks a lossless profile before it is deployed: a
// packet-level discrete-event simulator of one leaf switch (N senders into
// one egress port) with a shared buffer, PFC, ECN marking, DCQCN senders
// and a TCP-like lossy class, plus the DCQCN fluid model it is validated
// against.
//
// Run simulates a Scenario and returns a Result; Result.Table renders it
// as text and Result.WriteSVG draws queue depth and per-flow rates over
// time. FromProfile builds a Scenario from a lossless.Profile and a port
// class; Paper40G builds the DCQCN paper's 40G setting used for validation.
// Fluid integrates the DCQCN fluid model (Zhu et al., CoNEXT 2016) and
// FixedPoint gives its closed-form equilibrium.
//
// docs/simulator.md lists what is modelled and what is not, and the
// validation table (ours against the published figures).
package sim
