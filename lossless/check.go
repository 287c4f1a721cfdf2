package lossless

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// Status is how a target's effective value compares with the profile's.
type Status string

// Statuses, from best to worst; only Differs fails a check.
const (
	Same         Status = "="
	Rounded      Status = "≈" // up to one unit the target counts in
	SelfComputed Status = "~" // the target computes it from the profile's inputs
	Unconfirmed  Status = "?" // in a unit no reference we read confirms
	NotOnTarget  Status = "-" // the target has no such setting
	Differs      Status = "≠"
)

// CheckCell is one aspect on one target.
type CheckCell struct {
	Status Status
	Value  string
}

// CheckRow is one aspect: the profile's value and each target's.
type CheckRow struct {
	Aspect  string
	Profile string
	Cells   []CheckCell // in the order of CheckReport.Targets
}

// CheckReport compares what every target's rendering does.
type CheckReport struct {
	Profile string
	Targets []Rendering
	Rows    []CheckRow
}

// CheckOptions choose the platform of each target (over the profile's).
type CheckOptions struct {
	Platforms map[string]string
}

// Check renders the profile for every device target (port classes without
// interfaces get a placeholder one) and compares what each rendering does
// with the profile: lossless priorities, the DSCP (or PCP) → TC map, ECN
// thresholds in bytes, ETS shares, where CNPs go, watchdog times and
// headroom.
func Check(p Profile, o CheckOptions) (CheckReport, error) {
	for target := range o.Platforms {
		if _, ok := renderers[target]; !ok {
			return CheckReport{}, fmt.Errorf("lossless: check: %q is not a device target (one of %s)", target, strings.Join(DeviceTargets(), ", "))
		}
	}
	q := p
	q.Ports = slices.Clone(p.Ports)
	for i := range q.Ports {
		if len(q.Ports[i].Interfaces) == 0 {
			q.Ports[i].Interfaces = []string{q.Ports[i].Name + "1"}
		}
	}
	rep := CheckReport{Profile: p.Name}
	for _, target := range DeviceTargets() {
		r, err := RenderDevice(q, target, RenderOptions{Platform: o.Platforms[target]})
		if err != nil {
			return CheckReport{}, fmt.Errorf("lossless: check: %w", err)
		}
		rep.Targets = append(rep.Targets, r)
	}
	rep.Rows = checkRows(p, rep.Targets)
	return rep, nil
}

// Differs reports whether any target does something else than the profile
// says in a way it could express.
func (r CheckReport) Differs() bool {
	for _, row := range r.Rows {
		for _, c := range row.Cells {
			if c.Status == Differs {
				return true
			}
		}
	}
	return false
}

// Table is the report as text: one row per aspect, one column per target,
// each cell its status and value, then every target's notes.
func (r CheckReport) Table() string {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# iNOF lossless profile %q on every target: %s as the profile says, %s rounded to the target's unit, %s the target computes it,\n",
		r.Profile, Same, Rounded, SelfComputed)
	fmt.Fprintf(&buf, "# %s unit not confirmed, %s no such setting, %s differs\n", Unconfirmed, NotOnTarget, Differs)
	w := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	head := []string{"aspect", "profile"}
	for _, t := range r.Targets {
		head = append(head, t.Platform.String())
	}
	fmt.Fprintln(w, strings.Join(head, "\t"))
	for _, row := range r.Rows {
		cols := []string{row.Aspect, row.Profile}
		for _, c := range row.Cells {
			cols = append(cols, string(c.Status)+" "+c.Value)
		}
		fmt.Fprintln(w, strings.Join(cols, "\t"))
	}
	w.Flush()
	for _, t := range r.Targets {
		for _, n := range t.Notes {
			fmt.Fprintf(&buf, "%s: %s\n", t.Platform, n)
		}
	}
	return buf.String()
}

// checkRows builds the comparison rows.
func checkRows(p Profile, rs []Rendering) []CheckRow {
	var rows []CheckRow
	row := func(aspect, profile string, cell func(r Rendering) CheckCell) {
		cr := CheckRow{Aspect: aspect, Profile: profile}
		for _, r := range rs {
			cr.Cells = append(cr.Cells, cell(r))
		}
		rows = append(rows, cr)
	}
	row("lossless priorities", joinUint8(p.LosslessPriorities, ","), func(r Rendering) CheckCell {
		v := joinUint8(r.Effective.LosslessPriorities, ",")
		return CheckCell{statusIf(v == joinUint8(p.LosslessPriorities, ",")), v}
	})
	want := p.classifyMap()
	row(strings.ToUpper(p.RoCE.Trust)+" → TC", describeMap(want), func(r Rendering) CheckCell {
		e := r.Effective
		if e.Classify != p.RoCE.Trust || !slices.Equal(e.ToTC, want) {
			return CheckCell{Differs, e.Classify + " " + describeMap(e.ToTC)}
		}
		return CheckCell{Same, fmt.Sprintf("all %d", len(e.ToTC))}
	})
	row("ETS", describeETS(p.profileETS()), func(r Rendering) CheckCell {
		return CheckCell{compareETS(p.profileETS(), r.Effective.ETS), describeETS(r.Effective.ETS)}
	})
	wantCNP := p.cnpPlace(want, p.profileETS(), p.LosslessPriorities)
	row("CNP", describeCNP(wantCNP), func(r Rendering) CheckCell {
		return CheckCell{statusIf(r.Effective.CNP == wantCNP), describeCNP(r.Effective.CNP)}
	})
	for i, port := range p.Ports {
		base, err := PlanPort(p, port)
		if err != nil {
			continue
		}
		row(fmt.Sprintf("ECN %s (%dG)", port.Name, port.SpeedMbps/1000), describeECN(base.ECN), func(r Rendering) CheckCell {
			if r.Effective.ECN == nil {
				return CheckCell{NotOnTarget, "hosts do not mark"}
			}
			got := r.Effective.ECN[i]
			return CheckCell{compareECN(base.ECN, got), describeECN(got.ECNThresholds)}
		})
	}
	w := p.Watchdog
	row("PFC watchdog", fmt.Sprintf("%d/%d ms %s", w.DetectionMs, w.RestorationMs, w.Action), func(r Rendering) CheckCell {
		e := r.Effective.Watchdog
		if e == nil {
			return CheckCell{NotOnTarget, "none"}
		}
		v := fmt.Sprintf("%d/%d ms %s", e.DetectionMs, e.RestorationMs, orDefault(e.Action))
		switch {
		case e.DetectionMs != w.DetectionMs || e.RestorationMs != w.RestorationMs || e.Action != w.Action:
			return CheckCell{Differs, v}
		case e.Unconfirmed:
			return CheckCell{Unconfirmed, v}
		}
		return CheckCell{Same, v}
	})
	for i, port := range p.Ports {
		base, err := PlanPort(p, port)
		if err != nil {
			continue
		}
		row(fmt.Sprintf("headroom %s", port.Name), fmt.Sprintf("%d B", base.HeadroomBytes), func(r Rendering) CheckCell {
			if r.Effective.Headroom == nil {
				return CheckCell{NotOnTarget, "NIC buffer from the cable length"}
			}
			got := r.Effective.Headroom[i]
			// The target's own cell size changes the need: compare with
			// the plan on its platform.
			need, err := PlanPort(p.ForPlatform(r.Platform), port)
			if err != nil {
				return CheckCell{Differs, err.Error()}
			}
			return CheckCell{compareHeadroom(need, got), fmt.Sprintf("%d B", got.Bytes)}
		})
	}
	return rows
}

func statusIf(same bool) Status {
	if same {
		return Same
	}
	return Differs
}

func orDefault(action string) string {
	if action == "" {
		return "(device default)"
	}
	return action
}

// describeMap lists the entries that are not 0, e.g. "24→3 48→6, rest 0".
func describeMap(m []uint8) string {
	var parts []string
	for k, v := range m {
		if v != 0 {
			parts = append(parts, fmt.Sprintf("%d→%d", k, v))
		}
	}
	return strings.Join(parts, " ") + ", rest 0"
}

func describeETS(ets []TCShare) string {
	var parts []string
	for _, s := range ets {
		if s.Strict {
			parts = append(parts, fmt.Sprintf("%d:strict", s.TC))
		} else {
			parts = append(parts, fmt.Sprintf("%d:%s%%", s.TC, trimFloat(s.Percent)))
		}
	}
	return strings.Join(parts, " ")
}

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	return strings.TrimSuffix(s, ".0")
}

func compareETS(want, got []TCShare) Status {
	if len(want) != len(got) {
		return Differs
	}
	st := Same
	for i := range want {
		if want[i].TC != got[i].TC || want[i].Strict != got[i].Strict {
			return Differs
		}
		switch d := math.Abs(want[i].Percent - got[i].Percent); {
		case d >= 1:
			return Differs
		case d >= 0.05:
			st = Rounded
		}
	}
	return st
}

func describeCNP(c CNPPlace) string {
	s := fmt.Sprintf("DSCP %d → TC %d", c.DSCP, c.TC)
	if c.Strict {
		s += " strict"
	}
	if c.Lossless {
		s += " lossless"
	}
	return s
}

func describeECN(e ECNThresholds) string {
	return fmt.Sprintf("%d/%d B %d%%", e.KminBytes, e.KmaxBytes, e.PmaxPercent)
}

// compareECN: equal, rounded up by less than the 1 KiB any target counts
// in, or either in an unconfirmed unit; anything else differs.
func compareECN(want ECNThresholds, got ClassECN) Status {
	switch {
	case got.PmaxPercent != want.PmaxPercent:
		return Differs
	case got.ECNThresholds != want && !(within(want.KminBytes, got.KminBytes, 1024) && within(want.KmaxBytes, got.KmaxBytes, 1024)):
		return Differs
	case got.Unconfirmed:
		return Unconfirmed
	case got.ECNThresholds == want:
		return Same
	}
	return Rounded
}

func within(want, got, slack uint64) bool { return got >= want && got-want < slack }

// compareHeadroom: the target reserves at least what the profile needs on
// its platform (the xoff part where that is all the target's value is),
// rounded up by less than 1 KiB plus one block, or either in an unconfirmed
// unit; anything else differs.
func compareHeadroom(need PortPlan, got ClassHeadroom) Status {
	want := need.HeadroomBytes
	if got.XoffOnly {
		want = need.XoffBytes
	}
	switch {
	case got.Computed:
		return SelfComputed
	case !within(uint64(want), uint64(got.Bytes), 1024+huaweiBlockBytes):
		return Differs
	case got.Unconfirmed:
		return Unconfirmed
	case got.Bytes == want:
		return Same
	}
	return Rounded
}
