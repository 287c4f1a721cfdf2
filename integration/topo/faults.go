package topo

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Uplink is the name of a reflector's or switch's interface on the fabric
// bridge (its control network: BGP, BFD).
const Uplink = "fab0"

// netFaults is the part of a Node that breaks and mends a reflector's or
// switch's control network: its uplink, iptables rules in its namespace
// and impairments of the uplink.
type netFaults struct {
	n *Node
}

// SetUplink sets a reflector's or switch's uplink down or up (inside its
// namespace; the bridge's end loses carrier too), cutting it off from
// every other reflector and switch at once.
func (x *netFaults) SetUplink(up bool) error {
	n := x.n
	if n.Kind != KindReflector && n.Kind != KindSwitch {
		return fmt.Errorf("topo: %s has no uplink", n.Name)
	}
	if n.f.guest != nil {
		return n.f.guest.setLink(n.gns, Uplink, up)
	}
	state := "down"
	if up {
		state = "up"
	}
	_, err := n.NS.IP("link", "set", Uplink, state)
	return err
}

// iptables runs iptables inside the node's namespace.
func (x *netFaults) iptables(args ...string) error {
	n := x.n
	if n.f.guest != nil {
		return n.errInGuest("iptables")
	}
	out, err := n.NS.Command(append([]string{"iptables", "-w"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("topo: %s: iptables %s: %w: %s", n.Name, strings.Join(args, " "), err, out)
	}
	return nil
}

// bgpRules are the iptables rules (without -A/-D and chain) that drop
// every BGP segment between the node and peer, in both directions and
// whichever side opened the session.
func bgpRules(peer netip.Addr) [][]string {
	p := peer.String()
	return [][]string{
		{"INPUT", "-s", p, "-p", "tcp", "--sport", "179", "-j", "DROP"},
		{"INPUT", "-s", p, "-p", "tcp", "--dport", "179", "-j", "DROP"},
		{"OUTPUT", "-d", p, "-p", "tcp", "--sport", "179", "-j", "DROP"},
		{"OUTPUT", "-d", p, "-p", "tcp", "--dport", "179", "-j", "DROP"},
	}
}

// BlockBGP cuts (on) or restores (off) the BGP path between the node and
// peer (a control address) with iptables in the node's namespace, while
// everything else between them, BFD included, still passes: a partition
// of one session, not of the link. Segments are dropped silently, so the
// session lives on until its hold time runs out.
func (x *netFaults) BlockBGP(peer netip.Addr, on bool) error {
	op := "-D"
	if on {
		op = "-A"
	}
	for _, r := range bgpRules(peer) {
		if err := x.iptables(append([]string{op}, r...)...); err != nil {
			return err
		}
	}
	return nil
}

// Impairment is packet loss and delay on a node's uplink, the part of
// netem this harness needs (the kernels it runs on may lack sch_netem):
// loss through iptables' statistic match on both directions, delay of
// the node's outgoing packets through an NFQUEUE that holds each one
// before accepting it.
type Impairment struct {
	Loss  float64       // probability of dropping a packet, each way (0..1)
	Delay time.Duration // added to every packet the node sends
}

func (im Impairment) rules(queue uint16) [][]string {
	var out [][]string
	if im.Loss > 0 {
		p := strconv.FormatFloat(im.Loss, 'f', 4, 64)
		out = append(out,
			[]string{"INPUT", "-i", Uplink, "-m", "statistic", "--mode", "random", "--probability", p, "-j", "DROP"},
			[]string{"OUTPUT", "-o", Uplink, "-m", "statistic", "--mode", "random", "--probability", p, "-j", "DROP"})
	}
	if im.Delay > 0 {
		out = append(out, []string{"OUTPUT", "-o", Uplink, "-j", "NFQUEUE", "--queue-num", strconv.Itoa(int(queue)), "--queue-bypass"})
	}
	return out
}

// impairQueue is the NFQUEUE number the delay uses in every namespace
// (each namespace has its own queues).
const impairQueue = 7

// Impair applies im to the node's uplink until the returned function
// removes it. Only one impairment per node at a time.
func (x *netFaults) Impair(im Impairment) (undo func() error, err error) {
	n := x.n
	if n.Kind != KindReflector && n.Kind != KindSwitch {
		return nil, fmt.Errorf("topo: %s has no uplink", n.Name)
	}
	if n.f.guest != nil {
		return nil, n.errInGuest("impair")
	}
	if im.Loss < 0 || im.Loss >= 1 || im.Delay < 0 {
		return nil, fmt.Errorf("topo: impairment %+v: loss must be in [0,1), delay not negative", im)
	}
	var dq *delayQueue
	if im.Delay > 0 {
		if dq, err = openDelayQueue(n.NS, impairQueue, im.Delay); err != nil {
			return nil, err
		}
	}
	rules := im.rules(impairQueue)
	for i, r := range rules {
		if err := x.iptables(append([]string{"-I"}, r...)...); err != nil {
			for _, done := range rules[:i] {
				x.iptables(append([]string{"-D"}, done...)...)
			}
			if dq != nil {
				dq.Close()
			}
			return nil, err
		}
	}
	return func() error {
		var first error
		for _, r := range rules {
			if err := x.iptables(append([]string{"-D"}, r...)...); err != nil && first == nil {
				first = err
			}
		}
		if dq != nil {
			dq.Close() // after the rule is gone: queued packets are accepted first
		}
		return first
	}, nil
}

// HasIptables reports whether iptables is installed (BlockBGP and Impair
// need it).
func HasIptables() bool {
	_, err := exec.LookPath("iptables")
	return err == nil
}

// bfdRules are the iptables rules (without -A/-D) that drop every BFD
// control packet (UDP port 3784) the node receives or sends.
var bfdRules = [][]string{
	{"INPUT", "-p", "udp", "--dport", "3784", "-j", "DROP"},
	{"OUTPUT", "-p", "udp", "--dport", "3784", "-j", "DROP"},
}

// BlockBFD drops (on) or passes again (off) every BFD control packet of
// the node, BGP and all else still passing: on a reflector, every client's
// BFD goes down at once although the switches live (a false alarm of the
// kind a starved CPU causes).
func (x *netFaults) BlockBFD(on bool) error {
	op := "-D"
	if on {
		op = "-A"
	}
	for _, r := range bfdRules {
		if err := x.iptables(append([]string{op}, r...)...); err != nil {
			return err
		}
	}
	return nil
}
