package hostagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"

	"github.com/openinof/inof/app/api/apiclient"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/lossless/dcbnl"
	"github.com/openinof/inof/lossless/hostapply"
	"github.com/openinof/inof/lossless/readback"
)

// LosslessOptions say where the host finds the fabric's lossless profile and
// whether it configures its NICs with it. With neither Server nor File set
// the host leaves lossless settings alone.
type LosslessOptions struct {
	// Server is the admin API of a switch agent (read-only) or reflector
	// that serves the profile: "host:port" (TLS with TokenFile) or a unix
	// socket path.
	Server     string `yaml:"server"`
	TokenFile  string `yaml:"token_file"`
	CAFile     string `yaml:"ca_file"`
	ServerName string `yaml:"server_name"`
	// File reads the profile from a YAML file instead of a server.
	File string `yaml:"file"`
	// Apply runs the profile's dcb commands and ECN sysfs writes
	// (--apply-lossless). Off: the agent logs what it would run.
	Apply bool `yaml:"apply"`
	// PortClass is the profile's port class of this host's NICs.
	PortClass string `yaml:"port_class"`
	// Interfaces to configure; empty means every registered interface.
	Interfaces []string `yaml:"interfaces"`
	// Interval is how often the profile is fetched again; a new profile is
	// planned (and with Apply applied) once.
	Interval time.Duration `yaml:"interval"`
	// DCBPath is the iproute2 dcb binary.
	DCBPath string `yaml:"dcb_path"`
}

// enabled reports whether a profile source is configured.
func (o LosslessOptions) enabled() bool { return o.Server != "" || o.File != "" }

func (o LosslessOptions) validate(add func(string, ...any)) {
	if o.Server != "" && o.File != "" {
		add("lossless: server and file are exclusive")
	}
	if o.Apply && !o.enabled() {
		add("lossless.apply: set lossless.server or lossless.file to say where the profile comes from")
	}
	if o.enabled() {
		if o.PortClass == "" {
			add("lossless.port_class: must be set")
		}
		if o.Interval < time.Second {
			add("lossless.interval %s: at least 1s", o.Interval)
		}
		if o.DCBPath == "" {
			add("lossless.dcb_path: must be set")
		}
	}
}

// losslessSource fetches the fabric's profile.
type losslessSource struct {
	o    LosslessOptions
	conn *grpc.ClientConn
}

func newLosslessSource(o LosslessOptions) (*losslessSource, error) {
	s := &losslessSource{o: o}
	if o.Server != "" {
		conn, err := apiclient.Dial(apiclient.DialOptions{Server: o.Server, TokenFile: o.TokenFile, CAFile: o.CAFile, ServerName: o.ServerName})
		if err != nil {
			return nil, fmt.Errorf("lossless: %w", err)
		}
		s.conn = conn
	}
	return s, nil
}

func (s *losslessSource) fetch(ctx context.Context) (lossless.Profile, error) {
	if s.o.File != "" {
		b, err := os.ReadFile(s.o.File)
		if err != nil {
			return lossless.Profile{}, fmt.Errorf("lossless: %w", err)
		}
		p, err := lossless.ParseYAML(b)
		if err != nil {
			return lossless.Profile{}, fmt.Errorf("lossless: %s: %w", s.o.File, err)
		}
		return p, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := inofv1.NewFabricClient(s.conn).GetLosslessProfile(ctx, &inofv1.GetLosslessProfileRequest{})
	if err != nil {
		return lossless.Profile{}, fmt.Errorf("lossless: profile from %s: %w", s.o.Server, err)
	}
	p, err := lossless.ParseYAML([]byte(r.GetYaml()))
	if err != nil {
		return lossless.Profile{}, fmt.Errorf("lossless: profile from %s: %w", s.o.Server, err)
	}
	return p, nil
}

func (s *losslessSource) close() {
	if s.conn != nil {
		s.conn.Close()
	}
}

// losslessInterfaces are the interfaces the profile is applied to.
func (o Options) losslessInterfaces() []string {
	if len(o.Lossless.Interfaces) > 0 {
		return o.Lossless.Interfaces
	}
	out := make([]string, len(o.Interfaces))
	for i, it := range o.Interfaces {
		out[i] = it.Name
	}
	return out
}

// LosslessPlan fetches the fabric's profile once and plans this host's
// steps; inof-host --dry-run prints it.
func LosslessPlan(ctx context.Context, o Options) (hostapply.Plan, error) {
	if !o.Lossless.enabled() {
		return hostapply.Plan{}, errors.New("lossless: set lossless.server or lossless.file (--lossless-server, --lossless-file)")
	}
	src, err := newLosslessSource(o.Lossless)
	if err != nil {
		return hostapply.Plan{}, err
	}
	defer src.close()
	p, err := src.fetch(ctx)
	if err != nil {
		return hostapply.Plan{}, err
	}
	return hostapply.NewPlan(p, o.Lossless.PortClass, o.losslessInterfaces())
}

// dcbExecutor runs "dcb" as the configured binary.
type dcbExecutor struct {
	ex  Executor
	bin string
}

func (d dcbExecutor) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	if name == "dcb" {
		name = d.bin
	}
	return d.ex.Run(ctx, name, args...)
}

// runLossless fetches the profile every interval and, when it changed,
// plans it and applies it (lossless.apply) or logs the plan. It owns every
// piece of state it touches; it returns when ctx ends.
func (a *Agent) runLossless(ctx context.Context, ex Executor, dcb readback.DCBReader) {
	o := a.opt.Lossless
	src, err := newLosslessSource(o)
	if err != nil {
		a.log.Error("lossless profile: not followed", "err", err)
		return
	}
	defer src.close()
	t := a.clk.NewTicker(o.Interval)
	defer t.Stop()
	var last []byte
	var lastErr string
	for {
		p, err := src.fetch(ctx)
		switch {
		case err != nil:
			a.m.lossless.WithLabelValues("fetch-failed").Inc()
			if err.Error() != lastErr { // one log line per distinct error
				a.log.Warn("lossless profile: fetch failed; will retry", "err", err, "every", o.Interval)
				lastErr = err.Error()
			}
		default:
			lastErr = ""
			if enc, err := lossless.Encode(p); err != nil || !bytes.Equal(enc, last) {
				last = enc
				a.followProfile(ctx, p, ex, dcb)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// followProfile plans a new profile and applies or logs it.
func (a *Agent) followProfile(ctx context.Context, p lossless.Profile, ex Executor, dcb readback.DCBReader) {
	o := a.opt.Lossless
	pl, err := hostapply.NewPlan(p, o.PortClass, a.opt.losslessInterfaces())
	if err != nil {
		a.m.lossless.WithLabelValues("refused").Inc()
		a.log.Warn("lossless profile refused", "profile", p.Name, "err", err)
		return
	}
	if !o.Apply {
		a.m.lossless.WithLabelValues("planned").Inc()
		a.log.Info("lossless profile received; not applied (lossless.apply is off; inof-host --dry-run prints the commands)",
			"profile", p.Name, "port_class", o.PortClass, "interfaces", len(pl.Interfaces))
		return
	}
	res, err := hostapply.Apply(ctx, hostapply.Options{Exec: dcbExecutor{ex: ex, bin: o.DCBPath}, DCB: dcb}, pl)
	for _, r := range res {
		a.log.Info("lossless profile applied", "profile", p.Name, "result", r.String())
	}
	if err != nil {
		a.m.lossless.WithLabelValues("apply-failed").Inc()
		a.log.Warn("lossless profile: some steps failed", "profile", p.Name, "err", err)
		return
	}
	a.m.lossless.WithLabelValues("applied").Inc()
}

// openDCB opens the rtnetlink DCB reader; without one the agent applies but
// cannot read back.
func (a *Agent) openDCB() (readback.DCBReader, func()) {
	c, err := dcbnl.Dial()
	if err != nil {
		a.log.Warn("lossless profile: no DCB read back", "err", err)
		return nil, func() {}
	}
	return c, func() { c.Close() }
}
