package console

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// switchView is one switch (a BGP client) with its records.
type switchView struct {
	ID       string
	Session  *inofv1.Session // nil: no session of ours names it
	BFD      *inofv1.BFDSession
	Active   int
	Inactive int
	// Stale are the records graceful restart holds (the switch's session is
	// down), until HeldUntil.
	Stale     int
	HeldUntil time.Time
	Devices   []*inofv1.Device
}

type bfdView struct {
	*inofv1.BFDSession
	Detect time.Duration // how long without a packet before Down: rx × mult
}

// reflectorRow is one reflector of the fabric, side by side with the
// others: its revision and generation clock (nil when this daemon holds no
// replicated configuration) and, for a peer, its BGP session.
type reflectorRow struct {
	ID      string
	This    bool
	Clock   *inofv1.Reflector
	Session *inofv1.Session
	Ahead   string // how far its clock is ahead of ours ("" if not)
	// Refused: its clock is beyond the skew ahead, so reflectors with a
	// right clock refuse its changes.
	Refused bool
	State   string
}

type fabricView struct {
	Reflectors []*inofv1.Session
	// Side is every reflector (this one first) with its revision and
	// clock; MaxSkew is how far ahead a change may be dated.
	Side      []reflectorRow
	MaxSkew   time.Duration
	AheadWarn []string // reflectors whose changes are refused as from the future
	Switches  []*switchView
	BFD       []bfdView
	Devices   int
	Stale     int
	Topology  template.HTML
}

func (c *Console) fabric(r *http.Request) (string, any, error) {
	ctx, cancel := bounded(r)
	defer cancel()
	ss, err := c.f.ListSessions(ctx, &inofv1.ListSessionsRequest{})
	if err != nil {
		return "", nil, err
	}
	bfd, err := c.f.ListBFDSessions(ctx, &inofv1.ListBFDSessionsRequest{})
	if err != nil {
		return "", nil, err
	}
	devs, err := c.f.ListDevices(ctx, &inofv1.ListDevicesRequest{})
	if err != nil {
		return "", nil, err
	}
	refls, err := c.f.ListReflectors(ctx, &inofv1.ListReflectorsRequest{})
	if err != nil && status.Code(err) != codes.Unimplemented {
		return "", nil, err
	}
	ports := c.accessPorts(ctx)
	v := fabricView{Devices: len(devs.GetDevices())}
	sw := map[string]*switchView{}
	get := func(id string) *switchView {
		if sw[id] == nil {
			sw[id] = &switchView{ID: id}
		}
		return sw[id]
	}
	for _, s := range ss.GetSessions() {
		if s.GetKind() == "reflector" {
			v.Reflectors = append(v.Reflectors, s)
			continue
		}
		get(s.GetPeer()).Session = s
	}
	for _, b := range bfd.GetSessions() {
		v.BFD = append(v.BFD, bfdView{BFDSession: b, Detect: time.Duration(b.GetRxIntervalMs()*b.GetDetectMult()) * time.Millisecond})
		if x := sw[b.GetPeer()]; x != nil {
			x.BFD = b
		}
	}
	for _, d := range devs.GetDevices() {
		x := get(d.GetSwitch())
		x.Devices = append(x.Devices, d)
		switch {
		case d.GetHeldUntil() != nil:
			x.Stale++
			v.Stale++
			x.HeldUntil = d.GetHeldUntil().AsTime()
		case d.GetActive():
			x.Active++
		default:
			x.Inactive++
		}
	}
	for _, x := range sw {
		v.Switches = append(v.Switches, x)
	}
	slices.SortFunc(v.Switches, func(a, b *switchView) int { return strings.Compare(a.ID, b.ID) })
	v.sideBySide(refls)
	v.Topology = topology(v, ports)
	return "Fabric", v, nil
}

// sideBySide joins what this reflector hears of the fabric's reflectors
// (their revisions and clocks; nil from a daemon without them) with its
// BGP sessions to peer reflectors: one row per reflector, this one first.
func (v *fabricView) sideBySide(refls *inofv1.ListReflectorsResponse) {
	v.MaxSkew = time.Duration(refls.GetMaxSkewMs()) * time.Millisecond
	sessions := map[string]*inofv1.Session{}
	for _, s := range v.Reflectors {
		sessions[s.GetPeer()] = s
	}
	for _, r := range refls.GetReflectors() {
		row := reflectorRow{ID: r.GetRouterId(), This: r.GetSelf(), Clock: r}
		if row.ID == "" {
			row.ID = r.GetAddress()
		}
		if s := sessions[r.GetAddress()]; s != nil && !r.GetSelf() {
			row.Session = s
			delete(sessions, r.GetAddress())
		}
		ahead := time.Duration(r.GetAheadMs()) * time.Millisecond
		if ahead > 0 {
			row.Ahead = roundDuration(ahead).String()
		}
		row.Refused = ahead > v.MaxSkew
		var state []string
		switch {
		case row.Refused && r.GetSelf():
			state = append(state, "ahead: peer reflectors refuse its changes")
		case r.GetDeferredParts() > 0:
			state = append(state, fmt.Sprintf("refused as from the future (%d parts held back)", r.GetDeferredParts()))
		case row.Refused:
			state = append(state, "ahead: its changes are refused")
		}
		if n := r.GetBehindParts(); n > 0 {
			state = append(state, fmt.Sprintf("lacks %d of this reflector's parts", n))
		}
		row.State = strings.Join(state, "; ")
		if row.Refused {
			v.AheadWarn = append(v.AheadWarn, fmt.Sprintf("%s (%s ahead)", row.ID, row.Ahead))
		}
		v.Side = append(v.Side, row)
	}
	for _, s := range v.Reflectors {
		if sessions[s.GetPeer()] != nil {
			v.Side = append(v.Side, reflectorRow{ID: s.GetPeer(), Session: s})
		}
	}
}

// accessPorts maps device addresses to the access port their switch last
// reported them on, from the record events the feed still holds (device
// records carry the port; the device list does not).
func (c *Console) accessPorts(ctx context.Context) map[string]string {
	ports := map[string]string{}
	evs, err := c.keptEvents(ctx, func(e event) bool { return e.Kind == "record" && e.Attributes["port"] != "" })
	if err != nil {
		return ports
	}
	for _, e := range evs {
		ports[e.Subject] = e.Attributes["port"]
	}
	return ports
}

// topology draws the fabric as SVG: this reflector and its peers on top,
// the switches (leaves) below with a line per BGP session coloured by its
// state, and under each leaf the devices on its ports.
func topology(v fabricView, ports map[string]string) template.HTML {
	const (
		colW, rowH, top = 170, 90, 20
		devH            = 34
	)
	nsw := max(len(v.Switches), 1)
	maxDevs := 0
	for _, s := range v.Switches {
		maxDevs = max(maxDevs, len(s.Devices))
	}
	maxDevs = min(maxDevs, 12)
	width := max(nsw, len(v.Reflectors)+1) * colW
	height := top + 2*rowH + maxDevs*devH + 30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="topology" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="fabric topology" xmlns="http://www.w3.org/2000/svg">`, width, height, width, height)
	esc := template.HTMLEscapeString
	node := func(x, y int, cls, label, sub string) {
		fmt.Fprintf(&b, `<g class="node %s"><rect x="%d" y="%d" width="%d" height="40" rx="6"/><text x="%d" y="%d">%s</text><text class="sub" x="%d" y="%d">%s</text></g>`,
			cls, x-70, y, 140, x, y+17, esc(label), x, y+32, esc(sub))
	}
	// Reflectors: this one first, then its peers.
	nr := len(v.Reflectors) + 1
	rx := func(i int) int { return width/2 - (nr-1)*colW/2 + i*colW }
	sx := func(j int) int { return width/2 - (nsw-1)*colW/2 + j*colW }
	for j, s := range v.Switches {
		state := "none"
		if s.Session != nil {
			state = s.Session.GetState()
		}
		fmt.Fprintf(&b, `<line class="link %s" x1="%d" y1="%d" x2="%d" y2="%d"><title>BGP %s</title></line>`,
			cssState(state), rx(0), top+40, sx(j), top+rowH, esc(state))
	}
	for i, p := range v.Reflectors {
		fmt.Fprintf(&b, `<line class="link %s" x1="%d" y1="%d" x2="%d" y2="%d"><title>BGP %s</title></line>`,
			cssState(p.GetState()), rx(0)+70, top+20, rx(i+1)-70, top+20, esc(p.GetState()))
	}
	node(rx(0), top, "reflector", "this reflector", "route reflector")
	for i, p := range v.Reflectors {
		node(rx(i+1), top, "reflector "+cssState(p.GetState()), p.GetPeer(), "peer reflector, "+p.GetState())
	}
	for j, s := range v.Switches {
		state := "no session"
		if s.Session != nil {
			state = s.Session.GetState()
		}
		sub := fmt.Sprintf("%s, %d records", state, len(s.Devices))
		if s.Stale > 0 {
			sub = fmt.Sprintf("GR: %d stale", s.Stale)
		}
		y0 := top + rowH
		for k, d := range s.Devices {
			if k == maxDevs {
				fmt.Fprintf(&b, `<text class="more" x="%d" y="%d">… %d more</text>`, sx(j), y0+60+k*devH, len(s.Devices)-k)
				break
			}
			y := y0 + 52 + k*devH
			cls := "up"
			if !d.GetActive() {
				cls = "down"
			}
			if d.GetHeldUntil() != nil {
				cls = "stale"
			}
			fmt.Fprintf(&b, `<line class="link %s" x1="%d" y1="%d" x2="%d" y2="%d"/>`, cls, sx(j)-60, y0+40, sx(j)-60, y+12)
			label := d.GetAddress()
			if p := ports[d.GetAddress()]; p != "" {
				label = p + ": " + label
			}
			fmt.Fprintf(&b, `<g class="device %s %s"><rect x="%d" y="%d" width="125" height="24" rx="4"/><text x="%d" y="%d">%s</text><title>%s %s on %s, %s</title></g>`,
				roleName(d.GetRole()), cls, sx(j)-55, y, sx(j)+7, y+16, esc(label),
				roleName(d.GetRole()), esc(d.GetAddress()), esc(s.ID), esc(deviceState(d)))
		}
		node(sx(j), y0, "leaf "+cssState(state), "leaf "+s.ID, sub)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// cssState is a session state as a CSS class.
func cssState(s string) string {
	switch s {
	case "established", "up":
		return "up"
	case "none", "no session":
		return "none"
	}
	return "down"
}

// deviceState is a device's state in words.
func deviceState(d *inofv1.Device) string {
	switch {
	case d.GetHeldUntil() != nil:
		return "stale (graceful restart)"
	case d.GetActive():
		return "active"
	}
	return "inactive: " + d.GetReason()
}
