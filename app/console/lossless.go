package console

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/lossless/sim"
)

// The simulation the lossless page plots is `inofctl lossless simulate
// --from-server --plot`'s with its defaults: the profile's first port
// class, 8 RoCE senders into one, 10 ms, warm-up 2 ms, seed 1.
const (
	simSenders  = 8
	simDuration = 10 * time.Millisecond
	simWarmup   = 2 * time.Millisecond
	simSeed     = 1
)

type simResult struct {
	svg   []byte
	table string
	took  time.Duration
}

type losslessView struct {
	YAML     string
	Profile  lossless.Profile
	Problems []*inofv1.Problem
	Ports    []lossless.PortPlan
	// Speeds is the headroom and ECN at each speed of `inofctl lossless
	// table`, with the first port class's cable and MTU.
	Speeds    []lossless.PortPlan
	SpeedsFor lossless.Port
	Sim       string // the simulator's table
	SimTook   time.Duration
	SimErr    string
}

func (c *Console) lossless(r *http.Request) (string, any, error) {
	ctx, cancel := bounded(r)
	defer cancel()
	prof, err := c.f.GetLosslessProfile(ctx, &inofv1.GetLosslessProfileRequest{})
	if err != nil {
		return "", nil, err
	}
	val, err := c.f.ValidateLosslessProfile(ctx, &inofv1.ValidateLosslessProfileRequest{})
	if err != nil {
		return "", nil, err
	}
	v := losslessView{YAML: prof.GetYaml(), Problems: val.GetProblems()}
	if v.Profile, err = lossless.ParseYAML([]byte(prof.GetYaml())); err != nil {
		return "", nil, fmt.Errorf("lossless profile: %w", err)
	}
	if ports, err := lossless.Compute(v.Profile); err == nil {
		v.Ports = ports
	}
	if len(v.Profile.Ports) > 0 {
		first := v.Profile.Ports[0]
		v.SpeedsFor = first
		v.Speeds, _ = lossless.Table(v.Profile, first.MTU, lossless.TableSpeedsMbps(), []uint32{first.CableMeters})
	}
	res, err := c.simulation(ctx, prof.GetYaml(), v.Profile)
	if err != nil {
		v.SimErr = err.Error()
	} else {
		v.Sim, v.SimTook = res.table, res.took
	}
	return "Lossless", v, nil
}

// simulation runs (once per profile) the simulator on the profile.
func (c *Console) simulation(ctx context.Context, yaml string, p lossless.Profile) (simResult, error) {
	c.simMu.Lock()
	defer c.simMu.Unlock()
	if res, ok := c.sims[yaml]; ok {
		return res, nil
	}
	if len(p.Ports) == 0 {
		return simResult{}, fmt.Errorf("profile %q has no port classes", p.Name)
	}
	port := p.Ports[0]
	s, err := sim.FromProfile(p, port, simSenders, 0)
	if err != nil {
		return simResult{}, err
	}
	s.Name = fmt.Sprintf("profile %q, port %q at %d Mb/s, %d m: %d RoCE + 0 TCP to 1, seed %d",
		p.Name, port.Name, port.SpeedMbps, port.CableMeters, simSenders, simSeed)
	s.Seed, s.Duration, s.Warmup = simSeed, simDuration, simWarmup
	start := time.Now()
	out, err := sim.Run(ctx, s)
	if err != nil {
		return simResult{}, err
	}
	var b bytes.Buffer
	if err := out.WriteSVG(&b); err != nil {
		return simResult{}, err
	}
	res := simResult{svg: b.Bytes(), table: out.Table(), took: time.Since(start)}
	clear(c.sims) // keep the latest profile's only
	c.sims[yaml] = res
	return res, nil
}

// simulationSVG serves the plot of the fabric profile's simulation.
func (c *Console) simulationSVG(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := bounded(r)
	defer cancel()
	prof, err := c.f.GetLosslessProfile(ctx, &inofv1.GetLosslessProfileRequest{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	p, err := lossless.ParseYAML([]byte(prof.GetYaml()))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	res, err := c.simulation(ctx, prof.GetYaml(), p)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(res.svg)
}
