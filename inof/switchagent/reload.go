package switchagent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"

	"github.com/openinof/inof/bgp/bfd"
)

// LiveKeys are the option keys a running switch agent takes on a reload
// (SIGHUP); every other key needs a restart. The log keys are applied by
// the daemon's logger; the BFD timers and the access ports by Reload.
var LiveKeys = []string{"log.", "bfd.desired_min_tx", "bfd.required_min_rx", "bfd.detect_mult", "access_ports"}

// reconfRequest hands reloaded options to the loop.
type reconfRequest struct {
	next Options
	done chan error
}

// errNotRunning is Reload's answer outside Run.
var errNotRunning = errors.New("switchagent: not running")

// Reload applies the live keys of next (options of a reload) to the
// running agent, from its loop:
//   - the BFD sessions toward the reflectors take next's timers, announced
//     with a Poll sequence (sessions stay Up);
//   - access ports added are opened and start taking registrations; ports
//     removed are closed, and their devices leave as on a link down
//     (reason 1): hosts elsewhere are told, and the records go inactive.
//
// It returns when the loop is done with it, or when ctx ends.
func (a *Agent) Reload(ctx context.Context, next Options) error {
	if err := next.Validate(); err != nil {
		return fmt.Errorf("switchagent: %w", err)
	}
	select {
	case <-a.ready:
	default:
		return errNotRunning
	}
	req := reconfRequest{next: next, done: make(chan error, 1)}
	select {
	case a.reconf <- req:
	case <-a.runCtx.Done():
		return errNotRunning
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reconfigure carries out a reload in the loop.
func (a *Agent) reconfigure(next Options) error {
	return errors.Join(a.retimeBFD(next), a.reconcilePorts(next))
}

// retimeBFD gives the reflector sessions next's BFD timers.
func (a *Agent) retimeBFD(next Options) error {
	if a.bfd == nil || !next.BFD.Enabled || next.LocalAddress == "" {
		return nil
	}
	local := netip.MustParseAddr(next.LocalAddress)
	nb := next.BFD.Neighbor()
	t := bfd.Timers{DesiredMinTx: nb.DesiredMinTx, RequiredMinRx: nb.RequiredMinRx, DetectMult: nb.DetectMult}
	var errs []error
	for _, r := range a.opts.Reflectors {
		k := bfd.SessionKey{Local: local, Peer: netip.MustParseAddr(r.Address)}
		if _, ok := a.bfd.Session(k); !ok {
			continue
		}
		if err := a.bfd.SetTimers(k, t); err != nil {
			errs = append(errs, fmt.Errorf("switchagent: BFD %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// reconcilePorts opens the access ports next adds and closes those it
// drops. A port that cannot be opened is reported and left out; the others
// still change.
func (a *Agent) reconcilePorts(next Options) error {
	a.mu.Lock()
	cur := a.ports
	a.mu.Unlock()
	ports := maps.Clone(cur)
	var errs []error
	for _, name := range next.AccessPorts {
		if ports[name] != nil {
			continue
		}
		p, err := a.openPort(a.reg, name, slices.Contains(next.LegacyV0Ports, name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		a.startPort(p)
		ports[name] = p
		a.log.Info("access port added", "port", name)
	}
	var gone []*accessPort
	for name, p := range ports {
		if !slices.Contains(next.AccessPorts, name) {
			gone = append(gone, p)
			delete(ports, name)
		}
	}
	a.mu.Lock()
	a.ports = ports
	stray := a.stray
	a.mu.Unlock()
	if stray != nil {
		if err := stray.SetAccessPorts(slices.Collect(maps.Keys(ports))); err != nil {
			errs = append(errs, fmt.Errorf("switchagent: %w", err))
		}
	}
	if a.disc != nil {
		a.disc.srv.SetInterfaces(slices.Sorted(maps.Keys(ports))) // hosts on access ports only
	}
	if a.disc != nil && a.disc.mdns != nil {
		// The discovery controller is advertised on the access ports only.
		if err := a.disc.mdns.SetInterfaces(slices.Sorted(maps.Keys(ports))); err != nil {
			errs = append(errs, fmt.Errorf("switchagent: mDNS: %w", err))
		}
	}
	for _, p := range gone {
		p.stop()
		<-p.done
		a.reg.LinkDown(p.name) // its devices leave as on a link down
		a.log.Info("access port removed", "port", p.name)
	}
	return errors.Join(errs...)
}

// startPort runs a port's notifier and reader until the agent stops or
// the port is removed (p.stop).
func (a *Agent) startPort(p *accessPort) {
	pctx, stop := context.WithCancel(a.runCtx)
	p.stop, p.done = stop, make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	a.spawnIn(pctx, "notifier "+p.name, func(ctx context.Context) error { defer wg.Done(); return p.nt.Run(ctx) })
	a.spawnIn(pctx, "port "+p.name, func(ctx context.Context) error { defer wg.Done(); return p.sp.Run(ctx) })
	go func() { wg.Wait(); close(p.done) }()
}

// isAccessPort reports whether name is an access port now.
func (a *Agent) isAccessPort(name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.ports[name]
	return ok
}
