package readback

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/lossless/dcbnl"
)

// Difference is one setting whose host value is not the profile's.
type Difference struct {
	Setting string
	Want    string
	Have    string
}

func (d Difference) String() string {
	return fmt.Sprintf("%s: want %s, have %s", d.Setting, d.Want, d.Have)
}

// notReported stands for a part of the state the device did not report.
const notReported = "(not reported)"

// Diff lists how a host interface differs from what the Linux renderer
// configures for the profile. The PFC delay (cable length) is compared only
// when a port class lists the interface.
func Diff(p lossless.Profile, h Host) []Difference {
	var d []Difference
	add := func(setting string, want, have any) {
		w, hv := fmt.Sprint(want), fmt.Sprint(have)
		if w != hv {
			d = append(d, Difference{Setting: setting, Want: w, Have: hv})
		}
	}
	diffTrust(p, h.DCB, add)
	diffApps(p, h.DCB, add)
	diffETS(p, h.DCB, add)
	diffPFC(p, h, add)
	for _, s := range p.ECNSysfs() {
		have := "(missing)"
		if v, ok := h.ECN[s.Path]; ok {
			have = fmt.Sprint(v)
		}
		add("ecn/"+s.Path, s.Value, have)
	}
	return d
}

// Format writes the differences one per line, or says there are none.
func Format(ifname string, d []Difference) string {
	if len(d) == 0 {
		return ifname + ": matches the profile\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d difference(s) from the profile\n", ifname, len(d))
	for _, x := range d {
		b.WriteString("  " + x.String() + "\n")
	}
	return b.String()
}

type addFunc func(setting string, want, have any)

// diffTrust compares what the device trusts first. A device that reports
// no APP trust table (mlx5 has no apptrust operation) trusts DSCP exactly
// when it has DSCP APP entries (mlx5e_dcbnl_ieee_setapp switches it).
func diffTrust(p lossless.Profile, st dcbnl.State, add addFunc) {
	want := map[string]uint8{"dscp": dcbnl.SelDSCP, "pcp": dcbnl.SelPCP}[p.RoCE.Trust]
	if len(st.Trust) > 0 {
		add("apptrust first selector", selectorName(want), selectorName(st.Trust[0]))
		return
	}
	have := "pcp (no APP trust reported, no DSCP APP entries)"
	if slices.ContainsFunc(st.Apps, func(a dcbnl.App) bool { return a.Selector == dcbnl.SelDSCP }) {
		have = "dscp (no APP trust reported, DSCP APP entries)"
	}
	if !strings.HasPrefix(have, selectorName(want)+" ") {
		add("trust", selectorName(want), have)
	}
}

func selectorName(sel uint8) string {
	switch sel {
	case dcbnl.SelDSCP:
		return "dscp"
	case dcbnl.SelPCP:
		return "pcp"
	}
	return fmt.Sprintf("selector %d", sel)
}

// diffApps compares the DSCP entries of the APP table with the host map:
// all 64 DSCPs with trust dscp (unlisted ones at priority 0), none with
// trust pcp.
func diffApps(p lossless.Profile, st dcbnl.State, add addFunc) {
	m := p.HostDSCPToPriority
	if m == nil {
		m = p.DSCPToPriority
	}
	want := map[uint8]uint8{}
	if p.RoCE.Trust == "dscp" {
		for d := range uint8(64) {
			want[d] = m[d]
		}
	}
	have := map[uint16][]string{}
	for _, a := range st.Apps {
		if a.Selector == dcbnl.SelDSCP {
			have[a.Protocol] = append(have[a.Protocol], fmt.Sprint(a.Priority))
		}
	}
	seen := map[uint16]bool{}
	for _, dscp := range slices.Sorted(maps.Keys(want)) {
		prio := want[dscp]
		seen[uint16(dscp)] = true
		h := "(none)"
		if v := have[uint16(dscp)]; len(v) > 0 {
			h = strings.Join(v, ",")
		}
		add(fmt.Sprintf("app dscp-prio %d", dscp), prio, h)
	}
	for _, dscp := range slices.Sorted(maps.Keys(have)) {
		if !seen[dscp] {
			add(fmt.Sprintf("app dscp-prio %d", dscp), "(none)", strings.Join(have[dscp], ","))
		}
	}
}

func diffETS(p lossless.Profile, st dcbnl.State, add addFunc) {
	if st.ETS == nil {
		add("ets", "configured", notReported)
		return
	}
	for tc := range uint8(lossless.NumPriorities) {
		wantTSA, wantBW := "ets", uint8(0)
		for _, c := range p.TrafficClasses {
			if c.TC == tc {
				wantBW = c.Weight
				if c.Scheduler == lossless.SchedulerStrict {
					wantTSA = "strict"
				}
			}
		}
		add(fmt.Sprintf("ets tc-tsa %d", tc), wantTSA, tsaName(st.ETS.TSA[tc]))
		add(fmt.Sprintf("ets tc-bw %d", tc), wantBW, st.ETS.TCTxBW[tc])
		if int(tc) < len(p.PriorityToTC) {
			add(fmt.Sprintf("ets prio-tc %d", tc), p.PriorityToTC[tc], st.ETS.PrioTC[tc])
		}
	}
}

func tsaName(tsa uint8) string {
	switch tsa {
	case dcbnl.TSAStrict:
		return "strict"
	case dcbnl.TSAETS:
		return "ets"
	case dcbnl.TSACBShaper:
		return "cb-shaper"
	}
	return fmt.Sprintf("tsa %d", tsa)
}

func diffPFC(p lossless.Profile, h Host, add addFunc) {
	pfc := h.DCB.PFC
	if pfc == nil {
		add("pfc", "configured", notReported)
		return
	}
	onOff := map[bool]string{true: "on", false: "off"}
	for prio := range uint8(lossless.NumPriorities) {
		add(fmt.Sprintf("pfc prio-pfc %d", prio), onOff[slices.Contains(p.LosslessPriorities, prio)], onOff[pfc.On(prio)])
	}
	for _, port := range p.Ports {
		if slices.Contains(port.Interfaces, h.Ifname) {
			add("pfc delay (mlx5: cable metres)", port.CableMeters, pfc.Delay)
		}
	}
	if b := h.DCB.Buffer; b != nil {
		for prio := range uint8(lossless.NumPriorities) {
			want := 0
			if slices.Contains(p.LosslessPriorities, prio) {
				want = 1
			}
			add(fmt.Sprintf("buffer prio-buffer %d", prio), want, b.PrioBuffer[prio])
		}
	}
}
