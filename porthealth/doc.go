// Package porthealth watches the health of storage access ports: a PFC storm
// on a lossless priority (its pause counter rising at every poll for the
// watchdog's detection time, or the platform's own watchdog reporting the
// queue stormed) and receive errors (FCS/CRC and input errors above a limit
// within a window). Each condition has hysteresis (a port must stay clean for
// a recovery time before it is reported healthy) and a cap on flaps (after
// MaxFlaps sick reports within FlapWindow, a recovery waits for a clean
// FlapWindow).
//
// The Detector is pure: it is fed samples with their time and returns
// events, so tests drive it on synthetic time. A Monitor polls a Source on
// a ticker from one goroutine that owns the Detector, takes the ports to
// watch (Watch) and new thresholds (Tune) as messages before its next poll,
// and delivers events on a channel. Sources read platform counters: porthealth/sonic reads SONiC's
// COUNTERS_DB in Redis, porthealth/linuxstats reads netlink and ethtool
// statistics (docs/switch-agent.md, "Port health").
package porthealth
