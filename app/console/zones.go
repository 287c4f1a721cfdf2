package console

import (
	"context"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// maxMatrix bounds the who-sees-whom matrix (hosts and targets each).
const maxMatrix = 64

// cell is one (host, target) pair: Why's answer.
type cell struct {
	Visible bool
	Reason  string
}

// matrix is who sees whom: every registered host × every registered
// target, with the reason (the answer of `inofctl device why`).
type matrix struct {
	Hosts, Targets []*inofv1.Device
	Cells          [][]cell // [host][target]
	Cut            bool     // more hosts or targets than maxMatrix
	Revision       string
}

type zoneView struct {
	*inofv1.Zone
	Devices []string // registered devices in it
}

type zonesView struct {
	Zoning      *inofv1.Zoning
	Zones       []zoneView
	DefaultZone []string // registered devices in no custom zone
	Matrix      matrix
}

func (c *Console) zones(r *http.Request) (string, any, error) {
	ctx, cancel := bounded(r)
	defer cancel()
	z, devs, err := c.zoningAndDevices(ctx)
	if err != nil {
		return "", nil, err
	}
	in := map[string][]string{}
	v := zonesView{Zoning: z}
	for _, d := range devs.GetDevices() {
		if len(d.GetZones()) == 0 {
			v.DefaultZone = append(v.DefaultZone, d.GetAddress())
		}
		for _, n := range d.GetZones() {
			in[n] = append(in[n], d.GetAddress())
		}
	}
	for _, x := range z.GetZones() {
		v.Zones = append(v.Zones, zoneView{Zone: x, Devices: in[x.GetName()]})
	}
	if v.Matrix, err = c.matrix(ctx, devs.GetDevices()); err != nil {
		return "", nil, err
	}
	v.Matrix.Revision = z.GetRevision()
	return "Zones", v, nil
}

// matrixPage is the matrix alone: what the zones page's script fetches
// when the zoning or a device changes.
func (c *Console) matrixPage(r *http.Request) (string, any, error) {
	ctx, cancel := bounded(r)
	defer cancel()
	z, devs, err := c.zoningAndDevices(ctx)
	if err != nil {
		return "", nil, err
	}
	m, err := c.matrix(ctx, devs.GetDevices())
	if err != nil {
		return "", nil, err
	}
	m.Revision = z.GetRevision()
	return "Who sees whom", m, nil
}

// zoningAndDevices returns the committed zoning and every device.
func (c *Console) zoningAndDevices(ctx context.Context) (*inofv1.Zoning, *inofv1.ListDevicesResponse, error) {
	z, err := c.f.GetZoning(ctx, &inofv1.GetZoningRequest{})
	if err != nil {
		return nil, nil, err
	}
	devs, err := c.f.ListDevices(ctx, &inofv1.ListDevicesRequest{})
	if err != nil {
		return nil, nil, err
	}
	return z, devs, nil
}

// matrix asks Visibility for each host, the call behind `inofctl device
// why`, so every cell is that command's answer.
func (c *Console) matrix(ctx context.Context, devs []*inofv1.Device) (matrix, error) {
	var m matrix
	col := map[string]int{}
	for _, d := range devs {
		r := d.GetRole()
		if r == inofv1.Role_ROLE_HOST || r == inofv1.Role_ROLE_BOTH {
			if len(m.Hosts) == maxMatrix {
				m.Cut = true
			} else {
				m.Hosts = append(m.Hosts, d)
			}
		}
		if r == inofv1.Role_ROLE_TARGET || r == inofv1.Role_ROLE_BOTH {
			if len(m.Targets) == maxMatrix {
				m.Cut = true
			} else {
				col[d.GetAddress()] = len(m.Targets)
				m.Targets = append(m.Targets, d)
			}
		}
	}
	for _, h := range m.Hosts {
		row := make([]cell, len(m.Targets))
		for i, t := range m.Targets {
			row[i] = cell{Reason: "not registered when asked"}
			if t.GetAddress() == h.GetAddress() {
				row[i] = cell{Reason: "itself"}
			}
		}
		resp, err := c.f.Visibility(ctx, &inofv1.VisibilityRequest{Host: h.GetAddress()})
		if status.Code(err) == codes.NotFound {
			// The host left between the device list and this question.
			for i := range row {
				row[i] = cell{Reason: "host no longer registered"}
			}
			m.Cells = append(m.Cells, row)
			continue
		}
		if err != nil {
			return matrix{}, err
		}
		for _, w := range resp.GetTargets() {
			if i, ok := col[w.GetTarget()]; ok {
				row[i] = cell{Visible: w.GetVisible(), Reason: w.GetReason()}
			}
		}
		m.Cells = append(m.Cells, row)
	}
	return m, nil
}
