package lossless

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Every rendering is read back from its own text (NVUE and Linux here,
// SONiC, CloudEngine and Comware in readtext_*.go): what `inofctl lossless
// check` compares is what the emitted commands do, so a mistake in a
// command line or field shows as a difference instead of repeating the
// profile's values.

// textFields are the words of each command line of a rendering, comments
// and blank lines left out, with a trailing `|| …` (an optional step's
// report) cut.
func textFields(text []byte) [][]string {
	var out [][]string
	for _, line := range strings.Split(string(text), "\n") {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, "||"); i >= 0 {
			line = line[:i]
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, strings.Fields(line))
	}
	return out
}

// textValues returns, for every command line that starts with prefix and
// goes on, the words after the prefix.
func textValues(lines [][]string, prefix ...string) [][]string {
	var out [][]string
	for _, f := range lines {
		if len(f) > len(prefix) && slices.Equal(f[:len(prefix)], prefix) {
			out = append(out, f[len(prefix):])
		}
	}
	return out
}

// textBlocks returns the lines of every block a line `head… NAME` (or
// exactly `head…`, name "") opens and a line `quit` closes, by name.
// Blocks do not nest; one left open is an error.
func textBlocks(lines [][]string, head ...string) (map[string][][]string, error) {
	out := map[string][][]string{}
	for i := 0; i < len(lines); i++ {
		f := lines[i]
		if len(f) < len(head) || len(f) > len(head)+1 || !slices.Equal(f[:len(head)], head) {
			continue
		}
		name := ""
		if len(f) > len(head) {
			name = f[len(head)]
		}
		j := i + 1
		for j < len(lines) && !slices.Equal(lines[j], []string{"quit"}) {
			j++
		}
		if j == len(lines) {
			return nil, fmt.Errorf("%q is not closed by quit", strings.Join(f, " "))
		}
		out[name] = append(out[name], lines[i+1:j]...)
		i = j
	}
	return out, nil
}

// agree returns vs[0] when what reads the same for every one of vs (the
// settings of the interfaces devs), else an error naming the first
// interface that differs: a rendering that sets interfaces of one kind
// differently is itself wrong.
// readClasses reads every interface of each port class with read. A
// class's interfaces must agree (classes: each class's value, in plan
// order), and all interfaces must agree on what device (a projection of
// the value) says they set for the whole device; first is the first
// interface's value.
func readClasses[T any](plans []PortPlan, read func(dev string) (T, error), device func(T) any) (classes []T, first T, err error) {
	var all []T
	var devs []string
	for _, plan := range plans {
		var ports []T
		for _, dev := range plan.Port.Interfaces {
			v, err := read(dev)
			if err != nil {
				return nil, first, fmt.Errorf("interface %s: %w", dev, err)
			}
			ports = append(ports, v)
		}
		if len(ports) == 0 {
			return nil, first, fmt.Errorf("port class %s has no interfaces", plan.Port.Name)
		}
		v, err := agree(plan.Port.Interfaces, ports, func(v T) any { return v })
		if err != nil {
			return nil, first, err
		}
		classes, all, devs = append(classes, v), append(all, ports...), append(devs, plan.Port.Interfaces...)
	}
	if len(all) == 0 {
		return nil, first, errors.New("no port classes")
	}
	if first, err = agree(devs, all, device); err != nil {
		return nil, first, err
	}
	return classes, first, nil
}

func agree[T any](devs []string, vs []T, what func(T) any) (T, error) {
	first := fmt.Sprintf("%+v", what(vs[0]))
	for i, v := range vs[1:] {
		if got := fmt.Sprintf("%+v", what(v)); got != first {
			var zero T
			return zero, fmt.Errorf("interfaces %s and %s are set differently: %s and %s", devs[0], devs[i+1], first, got)
		}
	}
	return vs[0], nil
}

// percentOf turns relative weights of the non-strict scheduled classes of p
// into percentages.
func percentOf(p Profile, strict map[uint8]bool, weight map[uint8]uint32) map[uint8]float64 {
	var sum float64
	for _, c := range p.scheduled() {
		if !strict[c.TC] {
			sum += float64(weight[c.TC])
		}
	}
	pct := map[uint8]float64{}
	for _, c := range p.scheduled() {
		if !strict[c.TC] && sum > 0 {
			pct[c.TC] = 100 * float64(weight[c.TC]) / sum
		}
	}
	return pct
}

func atoi8(s string) (uint8, error) {
	v, err := strconv.ParseUint(s, 10, 8)
	return uint8(v), err
}

func atoi32(s string) (uint32, error) {
	v, err := strconv.ParseUint(s, 10, 32)
	return uint32(v), err
}

func atoi64(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }

// list8 parses "3" or "0,1,2".
func list8(s string) ([]uint8, error) {
	var out []uint8
	for _, part := range strings.Split(s, ",") {
		v, err := atoi8(part)
		if err != nil {
			return nil, fmt.Errorf("%q is not a list of numbers", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// toTC composes a classification: keys (DSCPs or priorities) → priority →
// traffic class.
func toTC(keyPrio []uint8, prioTC [NumPriorities]uint8) []uint8 {
	out := make([]uint8, len(keyPrio))
	for k, prio := range keyPrio {
		if prio < NumPriorities {
			out[k] = prioTC[prio]
		}
	}
	return out
}

// sharesFor keeps, in the profile's order, the traffic classes the profile
// schedules with what the device does for them.
func sharesFor(p Profile, mode map[uint8]bool, pct map[uint8]float64) []TCShare {
	var out []TCShare
	for _, c := range p.scheduled() {
		out = append(out, TCShare{TC: c.TC, Strict: mode[c.TC], Percent: pct[c.TC]})
	}
	return out
}

// readNVUE reads what an NVUE rendering does. Headroom is Cumulus' own
// computation from the cable length the text sets.
func readNVUE(text []byte, p Profile, plans []PortPlan) (Effective, error) {
	lines := textFields(text)
	var e Effective
	fail := func(format string, args ...any) (Effective, error) {
		return Effective{}, fmt.Errorf("lossless: reading the NVUE rendering back: "+format, args...)
	}
	switch trust := textValues(lines, "nv", "set", "qos", "mapping", "default-global", "trust"); {
	case len(trust) == 1 && trust[0][0] == "l3":
		e.Classify = "dscp"
	case len(trust) == 1 && trust[0][0] == "l2":
		e.Classify = "pcp"
	default:
		return fail("no single trust line")
	}
	keyPrio := make([]uint8, 64)
	key := "dscp"
	if e.Classify == "pcp" {
		keyPrio, key = make([]uint8, NumPriorities), "pcp"
	}
	for _, v := range textValues(lines, "nv", "set", "qos", "mapping", "default-global", key) {
		keys, err := list8(v[0])
		if err != nil || len(v) != 3 || v[1] != "switch-priority" {
			return fail("mapping %q", strings.Join(v, " "))
		}
		prio, err := atoi8(v[2])
		if err != nil {
			return fail("mapping %q: %v", strings.Join(v, " "), err)
		}
		for _, k := range keys {
			if int(k) >= len(keyPrio) {
				return fail("mapping %q: %d out of range", strings.Join(v, " "), k)
			}
			keyPrio[k] = prio
		}
	}
	var prioTC [NumPriorities]uint8
	for _, v := range textValues(lines, "nv", "set", "qos", "egress-queue-mapping", "default-global", "switch-priority") {
		prio, err1 := atoi8(v[0])
		tc, err2 := atoi8(v[len(v)-1])
		if err1 != nil || err2 != nil || len(v) != 3 || prio >= NumPriorities {
			return fail("egress queue mapping %q", strings.Join(v, " "))
		}
		prioTC[prio] = tc
	}
	e.ToTC = toTC(keyPrio, prioTC)
	strict, pct := map[uint8]bool{}, map[uint8]float64{}
	for _, v := range textValues(lines, "nv", "set", "qos", "egress-scheduler", "default-global", "traffic-class") {
		tc, err := atoi8(v[0])
		if err != nil || len(v) != 3 {
			return fail("egress scheduler %q", strings.Join(v, " "))
		}
		switch v[1] {
		case "mode":
			strict[tc] = v[2] == "strict"
		case "bw-percent":
			n, err := atoi32(v[2])
			if err != nil {
				return fail("egress scheduler %q", strings.Join(v, " "))
			}
			pct[tc] = float64(n)
		}
	}
	e.ETS = sharesFor(p, strict, pct)
	for i, plan := range plans {
		name := "inof-" + plan.Port.Name
		var prios []uint8
		cable := uint32(0)
		for _, v := range textValues(lines, "nv", "set", "qos", "pfc", name) {
			var err error
			switch {
			case len(v) == 2 && v[0] == "switch-priority":
				prios, err = list8(v[1])
			case len(v) == 2 && v[0] == "cable-length":
				cable, err = atoi32(v[1])
			}
			if err != nil {
				return fail("PFC profile %s %q: %v", name, strings.Join(v, " "), err)
			}
		}
		if i == 0 {
			e.LosslessPriorities = prios
		} else if !slices.Equal(prios, e.LosslessPriorities) {
			return fail("PFC profile %s enables priorities %v, %s %v", name, prios, "inof-"+plans[0].Port.Name, e.LosslessPriorities)
		}
		port := plan.Port
		port.CableMeters = cable
		hr, err := PlanPort(p, port)
		if err != nil {
			return fail("PFC profile %s: cable length %d m: %v", name, cable, err)
		}
		e.Headroom = append(e.Headroom, ClassHeadroom{Class: plan.Port.Name, Bytes: hr.HeadroomBytes, Computed: true})
		var ecn ECNThresholds
		tcs := p.losslessTCs()
		for _, v := range textValues(lines, "nv", "set", "qos", "congestion-control", name, "traffic-class") {
			if len(tcs) == 0 || len(v) != 3 || v[0] != strconv.Itoa(int(tcs[0])) {
				continue
			}
			n, err := strconv.ParseUint(v[2], 10, 64)
			switch v[1] {
			case "min-threshold":
				ecn.KminBytes = n
			case "max-threshold":
				ecn.KmaxBytes = n
			case "probability":
				ecn.PmaxPercent = uint8(min(n, 255))
			default:
				continue
			}
			if err != nil {
				return fail("congestion control %s %q", name, strings.Join(v, " "))
			}
		}
		e.ECN = append(e.ECN, ClassECN{Class: plan.Port.Name, ECNThresholds: ecn})
	}
	poll := textValues(lines, "nv", "set", "qos", "pfc-watchdog", "polling-interval")
	robust := textValues(lines, "nv", "set", "qos", "pfc-watchdog", "robustness")
	if len(poll) != 1 || len(robust) != 1 {
		return fail("no single PFC watchdog polling interval and robustness")
	}
	pollMs, err1 := atoi32(poll[0][0])
	rob, err2 := atoi32(robust[0][0])
	if err1 != nil || err2 != nil {
		return fail("PFC watchdog %v %v", poll[0], robust[0])
	}
	e.Watchdog = &WatchdogTimes{DetectionMs: pollMs * rob, RestorationMs: pollMs, Action: ActionDrop}
	e.CNP = p.cnpPlace(e.ToTC, e.ETS, e.LosslessPriorities)
	return e, nil
}

// colonMap parses dcb's "k:v" words into a map (keys 0–63).
func colonMap(words []string) (map[uint8]string, error) {
	out := map[uint8]string{}
	for _, w := range words {
		k, v, ok := strings.Cut(w, ":")
		n, err := atoi8(k)
		if !ok || err != nil || n >= 64 {
			return nil, fmt.Errorf("%q is not KEY:VALUE", w)
		}
		out[n] = v
	}
	return out, nil
}

// readLinux reads what the Linux script does on an mlx5 host, from the
// dcb commands of its first device (every device gets the same).
func readLinux(text []byte, p Profile) (Effective, error) {
	fail := func(format string, args ...any) (Effective, error) {
		return Effective{}, fmt.Errorf("lossless: reading the Linux rendering back: "+format, args...)
	}
	var dcb [][]string
	dev := ""
	for _, f := range textFields(text) {
		if len(f) < 5 || f[0] != "dcb" {
			continue
		}
		i := slices.Index(f, "dev")
		if i < 0 || i+1 >= len(f) {
			return fail("dcb line without a device: %q", strings.Join(f, " "))
		}
		if dev == "" {
			dev = f[i+1]
		}
		if f[i+1] == dev {
			dcb = append(dcb, f)
		}
	}
	// words after "dev DEV" of the dcb line starting with object, verb.
	args := func(object, verb string) []string {
		for _, f := range dcb {
			if f[1] == object && f[2] == verb {
				return f[5:]
			}
		}
		return nil
	}
	e := Effective{Classify: "pcp"}
	var keyPrio []uint8
	if a := args("app", "replace"); len(a) > 1 && a[0] == "dscp-prio" {
		m, err := colonMap(a[1:])
		if err != nil {
			return fail("dscp-prio: %v", err)
		}
		e.Classify, keyPrio = "dscp", make([]uint8, 64)
		for d, v := range m {
			if keyPrio[d], err = atoi8(v); err != nil {
				return fail("dscp-prio %d:%s", d, v)
			}
		}
	} else {
		keyPrio = []uint8{0, 1, 2, 3, 4, 5, 6, 7}
	}
	ets := args("ets", "set")
	section := func(name string) (map[uint8]string, error) {
		i := slices.Index(ets, name)
		if i < 0 {
			return nil, fmt.Errorf("ets without %s", name)
		}
		j := i + 1
		for j < len(ets) && strings.Contains(ets[j], ":") {
			j++
		}
		return colonMap(ets[i+1 : j])
	}
	tsa, err1 := section("tc-tsa")
	bw, err2 := section("tc-bw")
	ptc, err3 := section("prio-tc")
	if err := firstErr(err1, err2, err3); err != nil {
		return fail("%v", err)
	}
	var prioTC [NumPriorities]uint8
	for prio, v := range ptc {
		tc, err := atoi8(v)
		if err != nil || prio >= NumPriorities {
			return fail("prio-tc %d:%s", prio, v)
		}
		prioTC[prio] = tc
	}
	e.ToTC = toTC(keyPrio, prioTC)
	strict, pct := map[uint8]bool{}, map[uint8]float64{}
	for tc, v := range tsa {
		strict[tc] = v == "strict"
	}
	for tc, v := range bw {
		n, err := atoi32(v)
		if err != nil {
			return fail("tc-bw %d:%s", tc, v)
		}
		pct[tc] = float64(n)
	}
	e.ETS = sharesFor(p, strict, pct)
	if a := args("pfc", "set"); len(a) > 1 && a[0] == "prio-pfc" {
		j := 1
		for j < len(a) && strings.Contains(a[j], ":") {
			j++
		}
		m, err := colonMap(a[1:j])
		if err != nil {
			return fail("prio-pfc: %v", err)
		}
		for prio := range uint8(NumPriorities) {
			if m[prio] == "on" {
				e.LosslessPriorities = append(e.LosslessPriorities, prio)
			}
		}
	} else {
		return fail("no dcb pfc set line")
	}
	e.CNP = p.cnpPlace(e.ToTC, e.ETS, e.LosslessPriorities)
	return e, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// recoveryAction is the watchdog action a CloudEngine or Comware
// deadlock recovery word names ("discard", "forwarding").
func recoveryAction(word string) (string, bool) {
	switch word {
	case "discard":
		return ActionDrop, true
	case "forwarding":
		return ActionForward, true
	}
	return "", false
}
