package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/lossless/sim"
)

// maxSimFlows bounds --senders plus --tcp-senders: every flow keeps its own
// plot series and sender state, and an incast of more flows than a leaf has
// ports says nothing about a real fabric.
const maxSimFlows = 1024

// defaultWarmupCap is the longest warmup chosen when --warmup is not given
// (a fifth of --duration, at most this).
const defaultWarmupCap = 2 * time.Millisecond

// simulateFlags are the flags of `lossless simulate`.
type simulateFlags struct {
	profile    string
	fromServer bool
	port       string
	senders    int
	tcpSenders int
	speed      string
	cable      uint32
	duration   time.Duration
	warmup     time.Duration
	seed       uint64
	plot       string
}

func (a losslessCmds) losslessSimulateCommand() *cobra.Command {
	var f simulateFlags
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Simulate an N-to-1 incast under the profile, on this machine (PFC, ECN, DCQCN)",
		Long: "Runs the incast simulator (lossless/sim) locally; no server is needed unless\n" +
			"--from-server. --senders RoCE senders (storage class: PFC, ECN, DCQCN) and --tcp-senders\n" +
			"TCP senders (the other class) send at once into one egress port of a port class of the\n" +
			"profile (--port, default its first), with the headroom, ECN thresholds, DCQCN parameters\n" +
			"and ETS weights the profile gives; --speed and --cable change that port's link.\n\n" +
			"Prints throughput per class, Jain fairness, latency, queue p50/p99/max, pause frames,\n" +
			"CNPs, drops and each flow's rate; statistics start after --warmup. -o json|yaml prints the\n" +
			"same numbers; the time series goes to --plot only (SVG: queue depth and per-flow rates).\n" +
			"A run is deterministic for a given --seed. On a terminal, runs longer than about 2 s draw\n" +
			"a progress bar on stderr. docs/simulator.md says what is modelled and how to read the plot.",
		Example: "  inofctl lossless simulate --senders 8 --speed 100G --cable 5 --duration 10ms\n" +
			"  inofctl lossless simulate --profile lossless.yaml --senders 2 --tcp-senders 2 --plot incast.svg",
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.StringVar(&f.profile, "profile", "", "read the profile from this YAML `FILE` (default: the built-in default profile)")
	fl.BoolVar(&f.fromServer, "from-server", false, "simulate the fabric's profile, the one lossless show prints")
	fl.StringVar(&f.port, "port", "", "port class to simulate, by `NAME` (default: the profile's first)")
	fl.IntVar(&f.senders, "senders", 8, "RoCE senders (storage class)")
	fl.IntVar(&f.tcpSenders, "tcp-senders", 0, "TCP senders (the other class)")
	fl.StringVar(&f.speed, "speed", "", "link `SPEED`, e.g. 25G, 100G, 400G (default: the port class's)")
	fl.Uint32Var(&f.cable, "cable", 0, "cable length in `METERS` (default: the port class's)")
	fl.DurationVar(&f.duration, "duration", 10*time.Millisecond, "simulated time")
	fl.DurationVar(&f.warmup, "warmup", 0, "simulated time before statistics start (default: a fifth of --duration, at most 2ms)")
	fl.Uint64Var(&f.seed, "seed", 1, "random seed; the same seed gives the same run")
	fl.StringVar(&f.plot, "plot", "", "draw queue depth and per-flow rates over time to `FILE.svg` (SVG only, no PNG)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return a.losslessSimulate(cmd, f) }
	return cmd
}

// losslessSimulate checks the flags (a bad one is a usage error), builds
// the scenario, runs it and prints the result (failures exit 1).
func (a losslessCmds) losslessSimulate(cmd *cobra.Command, f simulateFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	var speedMbps uint32
	if f.speed != "" {
		var err error
		if speedMbps, err = parseSpeed(f.speed); err != nil {
			return err
		}
	}
	if !cmd.Flags().Changed("warmup") {
		f.warmup = min(f.duration/5, defaultWarmupCap)
	}
	p, err := a.simProfile(cmd.Context(), f)
	if err != nil {
		return runError{err}
	}
	port, err := pickPort(p, f.port)
	if err != nil {
		return err
	}
	if speedMbps != 0 {
		port.SpeedMbps = speedMbps
	}
	if cmd.Flags().Changed("cable") {
		port.CableMeters = f.cable
	}
	s, err := sim.FromProfile(p, port, f.senders, f.tcpSenders)
	if err != nil {
		return runError{err}
	}
	s.Name = fmt.Sprintf("profile %q, port %q at %s, %d m: %d RoCE + %d TCP to 1, seed %d",
		p.Name, port.Name, formatSpeed(port.SpeedMbps), port.CableMeters, f.senders, f.tcpSenders, f.seed)
	s.Seed, s.Duration, s.Warmup = f.seed, f.duration, f.warmup
	var bar *progressBar
	if isTerminal(a.io.Err) {
		bar = &progressBar{w: a.io.Err, start: time.Now(), now: time.Now}
		s.Progress = bar.update
	}
	res, err := simulate(cmd.Context(), s, f.plot)
	if bar != nil {
		bar.finish() // before the result, which may go to the same terminal
	}
	if err != nil {
		return runError{err}
	}
	if err := a.print("Simulation", newSimReport(res), func(w io.Writer) { io.WriteString(w, res.Table()) }); err != nil {
		return runError{err}
	}
	return nil
}

// check reports the first flag that is wrong on its own.
func (f simulateFlags) check() error {
	switch {
	case f.profile != "" && f.fromServer:
		return errors.New("--profile and --from-server exclude each other")
	case f.senders < 0 || f.tcpSenders < 0:
		return fmt.Errorf("--senders %d, --tcp-senders %d: must not be negative", f.senders, f.tcpSenders)
	case f.senders+f.tcpSenders == 0:
		return errors.New("no senders: give --senders or --tcp-senders at least 1")
	case f.senders+f.tcpSenders > maxSimFlows:
		return fmt.Errorf("--senders %d plus --tcp-senders %d: at most %d senders in all", f.senders, f.tcpSenders, maxSimFlows)
	case f.duration <= 0:
		return fmt.Errorf("--duration %v: must be positive", f.duration)
	case f.warmup < 0 || f.warmup >= f.duration:
		return fmt.Errorf("--warmup %v: want at least 0 and less than --duration %v", f.warmup, f.duration)
	}
	if f.plot != "" {
		switch ext := strings.ToLower(filepath.Ext(f.plot)); ext {
		case ".svg":
		case ".png":
			return fmt.Errorf("--plot %s: PNG is not supported, the plot is SVG only (name the file .svg)", f.plot)
		default:
			return fmt.Errorf("--plot %s: want a file name ending in .svg", f.plot)
		}
	}
	return nil
}

// simProfile returns the profile to simulate: the file's, the server's or
// the default.
func (a losslessCmds) simProfile(ctx context.Context, f simulateFlags) (lossless.Profile, error) {
	if f.profile != "" || f.fromServer {
		return a.losslessProfile(ctx, f.profile)
	}
	return lossless.Default(), nil
}

// pickPort returns the port class named name, or the profile's first.
func pickPort(p lossless.Profile, name string) (lossless.Port, error) {
	names := make([]string, len(p.Ports))
	for i, port := range p.Ports {
		if name == "" || port.Name == name {
			return port, nil
		}
		names[i] = port.Name
	}
	if name == "" {
		return lossless.Port{}, fmt.Errorf("profile %q has no port classes", p.Name)
	}
	return lossless.Port{}, fmt.Errorf("--port %s: profile %q has port classes %s", name, p.Name, strings.Join(names, ", "))
}

// simulate runs s and writes the plot to plotFile when set. The plot is
// written through a new file beside plotFile (createExclusive), created
// before the run so that a directory that cannot be written fails at once,
// and renamed over plotFile only once whole: a partial or empty plot is
// worse than none.
func simulate(ctx context.Context, s sim.Scenario, plotFile string) (sim.Result, error) {
	var plot *outFile
	if plotFile != "" {
		tmp, err := createExclusive(plotFile, 0o644)
		if err != nil {
			return sim.Result{}, fmt.Errorf("plot: %w", err)
		}
		plot = &outFile{Writer: tmp, path: plotFile, tmp: tmp}
		defer plot.abort()
	}
	res, err := sim.Run(ctx, s)
	if err == nil && plot != nil {
		if err = res.WriteSVG(plot); err == nil {
			err = plot.commit()
		}
	}
	return res, err
}

// parseSpeed reads a link speed such as 100G or 100M as Mb/s; only speeds
// with a tabulated pause response time are accepted.
func parseSpeed(s string) (uint32, error) {
	bad := fmt.Errorf("--speed %q: want a link speed such as 25G, 100G or 400G", s)
	if len(s) < 2 {
		return 0, bad
	}
	mult := map[string]uint64{"G": 1000, "M": 1}[strings.ToUpper(s[len(s)-1:])]
	v, err := strconv.ParseUint(s[:len(s)-1], 10, 32)
	if mult == 0 || err != nil {
		return 0, bad
	}
	mbps := v * mult
	if _, ok := lossless.PauseQuanta(uint32(mbps)); mbps != uint64(uint32(mbps)) || !ok {
		return 0, fmt.Errorf("--speed %s: not a standard Ethernet speed (no pause response time is known for it); try 25G, 100G or 400G", s)
	}
	return uint32(mbps), nil
}

// formatSpeed writes Mb/s the way --speed takes it.
func formatSpeed(mbps uint32) string {
	if mbps%1000 == 0 {
		return strconv.FormatUint(uint64(mbps/1000), 10) + "G"
	}
	return strconv.FormatUint(uint64(mbps), 10) + "M"
}

// simReport is the JSON and YAML form of a sim.Result: snake_case names
// with the unit in the name, classes by name, only classes that have
// flows; the plot series is left out (--plot draws it).
type simReport struct {
	Scenario         string     `json:"scenario" yaml:"scenario"`
	LinkGbps         float64    `json:"link_gbps" yaml:"link_gbps"`
	MeasuredUs       float64    `json:"measured_us" yaml:"measured_us"`
	EgressGbps       float64    `json:"egress_gbps" yaml:"egress_gbps"`
	Utilisation      float64    `json:"utilisation" yaml:"utilisation"`
	JainAll          float64    `json:"jain_all" yaml:"jain_all"`
	Queue            simQueue   `json:"queue" yaml:"queue"`
	StorageQueue     simQueue   `json:"storage_queue" yaml:"storage_queue"`
	PauseFrames      int64      `json:"pause_frames" yaml:"pause_frames"`
	PauseFramesTotal int64      `json:"pause_frames_total" yaml:"pause_frames_total"`
	ResumeFrames     int64      `json:"resume_frames" yaml:"resume_frames"`
	PausedFraction   float64    `json:"paused_fraction" yaml:"paused_fraction"`
	CNPs             int64      `json:"cnps" yaml:"cnps"`
	CNPsTotal        int64      `json:"cnps_total" yaml:"cnps_total"`
	MaxHeadroomBytes int64      `json:"max_headroom_bytes" yaml:"max_headroom_bytes"`
	Events           int64      `json:"events" yaml:"events"`
	Classes          []simClass `json:"classes" yaml:"classes"`
	Flows            []simFlow  `json:"flows" yaml:"flows"`
}

// simQueue is sim.QueueStats in bytes; MaxBytes covers the whole run.
type simQueue struct {
	P50Bytes  int64   `json:"p50_bytes" yaml:"p50_bytes"`
	P99Bytes  int64   `json:"p99_bytes" yaml:"p99_bytes"`
	MeanBytes float64 `json:"mean_bytes" yaml:"mean_bytes"`
	MaxBytes  int64   `json:"max_bytes" yaml:"max_bytes"`
}

// simClass is one sim.ClassResult.
type simClass struct {
	Class        string  `json:"class" yaml:"class"`
	Flows        int     `json:"flows" yaml:"flows"`
	Gbps         float64 `json:"gbps" yaml:"gbps"`
	GoodputGbps  float64 `json:"goodput_gbps" yaml:"goodput_gbps"`
	Jain         float64 `json:"jain" yaml:"jain"`
	Drops        int64   `json:"drops" yaml:"drops"`
	LatencyP50Us float64 `json:"latency_p50_us" yaml:"latency_p50_us"`
	LatencyP99Us float64 `json:"latency_p99_us" yaml:"latency_p99_us"`
}

// simFlow is one sim.FlowResult.
type simFlow struct {
	Flow          int     `json:"flow" yaml:"flow"`
	Class         string  `json:"class" yaml:"class"`
	Gbps          float64 `json:"gbps" yaml:"gbps"`
	GoodputGbps   float64 `json:"goodput_gbps" yaml:"goodput_gbps"`
	FinalRateGbps float64 `json:"final_rate_gbps" yaml:"final_rate_gbps"`
	CNPs          int64   `json:"cnps" yaml:"cnps"`
	Drops         int64   `json:"drops" yaml:"drops"`
}

func newSimReport(r sim.Result) simReport {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	q := func(s sim.QueueStats) simQueue {
		return simQueue{P50Bytes: s.P50, P99Bytes: s.P99, MeanBytes: s.Mean, MaxBytes: s.Max}
	}
	rep := simReport{
		Scenario: r.Scenario, LinkGbps: r.LinkGbps, MeasuredUs: us(r.Measured),
		EgressGbps: r.EgressGbps, Utilisation: r.Utilisation, JainAll: r.JainAll,
		Queue: q(r.Queue), StorageQueue: q(r.StorageQueue),
		PauseFrames: r.PauseFrames, PauseFramesTotal: r.PauseFramesTotal, ResumeFrames: r.ResumeFrames,
		PausedFraction: r.PausedFraction, CNPs: r.CNPs, CNPsTotal: r.CNPsTotal,
		MaxHeadroomBytes: r.MaxHeadroomBytes, Events: r.Events,
		Classes: []simClass{}, Flows: make([]simFlow, len(r.Flows)),
	}
	for _, c := range r.Classes {
		if c.Flows == 0 {
			continue
		}
		rep.Classes = append(rep.Classes, simClass{Class: c.Class.String(), Flows: c.Flows, Gbps: c.Gbps,
			GoodputGbps: c.GoodputGbps, Jain: c.Jain, Drops: c.Drops,
			LatencyP50Us: us(c.LatencyP50), LatencyP99Us: us(c.LatencyP99)})
	}
	for i, fr := range r.Flows {
		rep.Flows[i] = simFlow{Flow: i, Class: fr.Class.String(), Gbps: fr.Gbps, GoodputGbps: fr.GoodputGbps,
			FinalRateGbps: fr.FinalRateGbps, CNPs: fr.CNPs, Drops: fr.Drops}
	}
	return rep
}

// progressDelay is the wall time a run may take before the progress bar
// appears: short runs stay quiet.
const progressDelay = 2 * time.Second

// progressWidth is the bar's length in characters.
const progressWidth = 30

// progressBar draws a run's progress on one terminal line, redrawn in
// place, once the run has taken progressDelay; finish clears the line.
type progressBar struct {
	w     io.Writer
	start time.Time
	now   func() time.Time
	drawn bool
}

// update is a sim.Scenario.Progress callback.
func (p *progressBar) update(done, total time.Duration) {
	if total <= 0 || p.now().Sub(p.start) < progressDelay {
		return
	}
	frac := min(max(float64(done)/float64(total), 0), 1)
	n := int(frac * progressWidth)
	fmt.Fprintf(p.w, "\r[%s%s] %3.0f %%  %v of %v simulated\x1b[K", strings.Repeat("#", n),
		strings.Repeat(" ", progressWidth-n), 100*frac, done.Truncate(time.Microsecond), total)
	p.drawn = true
}

// finish clears the bar if it was drawn.
func (p *progressBar) finish() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

// isTerminal reports whether w is a character device, as a terminal is.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
