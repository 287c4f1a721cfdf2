// Package peering holds the options both roles of inofd give their BGP
// sessions: BFD timers, graceful restart and session security (TCP-MD5,
// GTSM). One type per concern, one spelling of every key and one set of
// rules for the reflector and the switch agent, mapped here onto package
// bgp's types.
package peering

import (
	"errors"
	"fmt"
	"time"

	"github.com/openinof/inof/bgp"
)

// BFD is the BFD of the sessions (single-hop, RFC 5881), with RFC 5880's
// names for the timers.
type BFD struct {
	Enabled bool `yaml:"enabled"`
	// DesiredMinTx is the transmit interval we want (10 ms … 1 min).
	DesiredMinTx time.Duration `yaml:"desired_min_tx"`
	// RequiredMinRx is the fastest receive interval we accept.
	RequiredMinRx time.Duration `yaml:"required_min_rx"`
	// DetectMult is how many packets may be missed before Down.
	DetectMult uint8 `yaml:"detect_mult"`
	// Confirm: a reflector confirms a switch's BFD down while its BGP
	// session stands before the switch is declared gone — BFD not back
	// within ConfirmHold (0: the detection time) — and dampens flapping
	// switches (bgp.BFDConfirm); a switch holds the drop of a reflector
	// whose kernel answers the echo probe (Probe) for ConfirmHold. Off,
	// every BFD down is a switch gone, or a reflector dropped, at once.
	Confirm     bool          `yaml:"confirm"`
	ConfirmHold time.Duration `yaml:"confirm_hold"`
	// Probe (with Confirm): at a BFD down the neighbor's kernel, which
	// answered ICMP echo requests while BFD was up, is asked again with a
	// tenth of the detection time (5–50 ms) to answer. A reflector confirms
	// a switch's down at once when it is silent (the box or every path to
	// it is gone, not only late); off, a held down waits out ConfirmHold.
	// A switch holds the drop of a reflector only while it answers; off,
	// it drops the reflector at once.
	Probe bool `yaml:"probe"`
	// Dampen (a reflector's): a switch declared gone again within 5
	// minutes stays down after BFD is back, 1 s doubling up to 60 s.
	Dampen bool `yaml:"dampen"`
}

// DefaultBFD is on, 3 × 100 ms, downs confirmed (probing the switch),
// flaps dampened.
func DefaultBFD() BFD {
	return BFD{Enabled: true, DesiredMinTx: 100 * time.Millisecond, RequiredMinRx: 100 * time.Millisecond, DetectMult: 3, Confirm: true, Probe: true, Dampen: true}
}

// Confirmation is the speaker's confirmation of BFD downs.
func (b BFD) Confirmation() bgp.BFDConfirm {
	return bgp.BFDConfirm{Disabled: !b.Confirm, Hold: b.ConfirmHold, NoProbe: !b.Probe, NoDampen: !b.Dampen}
}

// Validate checks the timers of an enabled BFD; prefix names the keys
// ("bfd").
func (b BFD) Validate(prefix string) error {
	if !b.Enabled {
		return nil
	}
	if b.ConfirmHold < 0 || b.ConfirmHold > time.Minute {
		return fmt.Errorf("%s.confirm_hold %v: want 0 (the detection time) up to 1m", prefix, b.ConfirmHold)
	}
	return Timers(prefix, b.DesiredMinTx, b.RequiredMinRx, b.DetectMult, false)
}

// Neighbor returns the timers for a neighbor, nil when BFD is off.
func (b BFD) Neighbor() *bgp.NeighborBFD {
	if !b.Enabled {
		return nil
	}
	return &bgp.NeighborBFD{DesiredMinTx: b.DesiredMinTx, RequiredMinRx: b.RequiredMinRx, DetectMult: b.DetectMult}
}

// Timers checks BFD timers under prefix; with zeroOK a zero value (which
// falls back to another one, as a reflector's per-client override does) is
// allowed.
func Timers(prefix string, tx, rx time.Duration, mult uint8, zeroOK bool) error {
	var errs []error
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{"desired_min_tx", tx}, {"required_min_rx", rx}} {
		if (t.d == 0 && zeroOK) || (t.d >= 10*time.Millisecond && t.d <= time.Minute) {
			continue
		}
		errs = append(errs, fmt.Errorf("%s.%s %s: want 10ms..1m", prefix, t.name, t.d))
	}
	if mult == 0 && !zeroOK {
		errs = append(errs, fmt.Errorf("%s.detect_mult: must be at least 1", prefix))
	}
	return errors.Join(errs...)
}

// GracefulRestart configures RFC 4724 (and RFC 8538) on every session.
type GracefulRestart struct {
	Enabled bool `yaml:"enabled"`
	// RestartTime is how long peers keep our routes after we vanished
	// (whole seconds, 1 s … 4095 s).
	RestartTime time.Duration `yaml:"restart_time"`
	// SettleTime holds back withdraws of a neighbor that just came back
	// (bgp.GracefulRestart.SettleTime).
	SettleTime time.Duration `yaml:"settle_time"`
}

// DefaultGracefulRestart is on: 120 s restart time, 10 s settle.
func DefaultGracefulRestart() GracefulRestart {
	return GracefulRestart{Enabled: true, RestartTime: 120 * time.Second, SettleTime: 10 * time.Second}
}

// Validate checks an enabled graceful restart.
func (g GracefulRestart) Validate() error {
	if !g.Enabled {
		return nil
	}
	var errs []error
	if g.RestartTime < time.Second || g.RestartTime > 4095*time.Second || g.RestartTime%time.Second != 0 {
		errs = append(errs, fmt.Errorf("graceful_restart.restart_time %s: want whole seconds, 1s..4095s", g.RestartTime))
	}
	if g.SettleTime <= 0 {
		errs = append(errs, fmt.Errorf("graceful_restart.settle_time %s: must be positive", g.SettleTime))
	}
	return errors.Join(errs...)
}

// Speaker returns the speaker's graceful restart; restarting says this
// process restarts one that did not stop cleanly.
func (g GracefulRestart) Speaker(restarting bool) bgp.GracefulRestart {
	return bgp.GracefulRestart{Enabled: g.Enabled, RestartTime: g.RestartTime, SettleTime: g.SettleTime,
		Restarting: restarting && g.Enabled, Notification: true}
}

// MaxPassword is the kernel's TCP-MD5 key limit (TCP_MD5SIG_MAXKEYLEN).
const MaxPassword = 80

// Security is the protection of the sessions. Both keys sit at the top
// level of a daemon's configuration (embed it with `yaml:",inline"`).
type Security struct {
	// Password is the TCP-MD5 key of every session (a reflector's
	// neighbor may override it); empty disables MD5.
	Password string `yaml:"password"`
	// TTLSecurity turns GTSM (RFC 5082) on: send and require TTL 255.
	TTLSecurity bool `yaml:"ttl_security"`
}

// Validate checks the password.
func (s Security) Validate() error { return Password("password", s.Password) }

// Password checks a TCP-MD5 key named key.
func Password(key, pw string) error {
	if len(pw) > MaxPassword {
		return fmt.Errorf("%s: %d bytes, TCP-MD5 keys have at most %d", key, len(pw), MaxPassword)
	}
	return nil
}

// RenamedKeys maps the keys an older spelling used to today's: a value
// under an old key is taken for the new one with a deprecation warning
// (the switch agent spelled the BFD timers min_tx, min_rx, multiplier).
func RenamedKeys() map[string]string {
	return map[string]string{
		"bfd.min_tx":     "bfd.desired_min_tx",
		"bfd.min_rx":     "bfd.required_min_rx",
		"bfd.multiplier": "bfd.detect_mult",
	}
}
