// Package lossless models the fabric's lossless Ethernet profile for NVMe over
// RoCE: which priorities are lossless, how DSCP maps to priorities and traffic
// classes, ETS shares, per-port-class PFC headroom, ECN marking thresholds,
// DCQCN NIC parameters and the PFC watchdog.
//
// A Profile is read and written as YAML, validated with Validate (every
// problem at once, each with field, value, rule and fix), computed into
// per-port headroom and ECN thresholds with Compute, and rendered for a host
// or switch target with RenderDevice on one of the target's platforms (the
// hardware families of Platforms): the configuration text, notes on every
// way it differs from the profile, and the Effective values it sets. Check
// renders every target and compares those values. Encode and Decode give the
// compact form carried as a configuration record payload.
//
// Formulas and defaults come from public sources listed in docs/lossless.md:
// the SONiC dynamic headroom model (sonic-swss buffer_headroom_mellanox.lua),
// the Linux mlx5 port buffer code, the HPCC simulator's ECN scaling, the SONiC
// YANG models and the vendors' command references.
package lossless
