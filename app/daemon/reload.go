package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// ChangedKeys lists the dotted keys whose values differ between two
// options structs of one type, as their YAML forms name them. A list
// counts as one key ("access_ports", "clients"): any change to it is a
// change of the list.
func ChangedKeys(old, new any) ([]string, error) {
	a, err := flatten(old)
	if err != nil {
		return nil, err
	}
	b, err := flatten(new)
	if err != nil {
		return nil, err
	}
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out, nil
}

// flatten maps every leaf key of v's YAML form (lists whole) to its YAML
// text.
func flatten(v any) (map[string]string, error) {
	raw, err := yaml.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("reload: %w", err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("reload: %w", err)
	}
	out := map[string]string{}
	var walk func(prefix string, m map[string]any) error
	walk = func(prefix string, m map[string]any) error {
		for k, val := range m {
			key := prefix + k
			if sub, ok := val.(map[string]any); ok {
				if err := walk(key+".", sub); err != nil {
					return err
				}
				continue
			}
			b, err := yaml.Marshal(val)
			if err != nil {
				return err
			}
			out[key] = string(b)
		}
		return nil
	}
	if err := walk("", doc); err != nil {
		return nil, fmt.Errorf("reload: %w", err)
	}
	return out, nil
}

// ReloadPlan sorts the keys a reload changes.
type ReloadPlan struct {
	// Live are the changed keys that take effect now.
	Live []string
	// Restart are the changed keys that take effect only at the next
	// start; until then the daemon keeps running with their old values.
	Restart []string
}

// PlanReload compares the options a daemon started with, the ones in force
// (after earlier reloads) and the ones just loaded. live lists the keys
// that can change while the daemon runs; an entry ending in "." covers
// every key below it ("log." is log.level and log.format).
func PlanReload(started, current, next any, live []string) (ReloadPlan, error) {
	isLive := func(k string) bool {
		for _, l := range live {
			if k == l || (strings.HasSuffix(l, ".") && strings.HasPrefix(k, l)) {
				return true
			}
		}
		return false
	}
	var p ReloadPlan
	now, err := ChangedKeys(current, next)
	if err != nil {
		return p, err
	}
	for _, k := range now {
		if isLive(k) {
			p.Live = append(p.Live, k)
		}
	}
	since, err := ChangedKeys(started, next)
	if err != nil {
		return p, err
	}
	for _, k := range since {
		if !isLive(k) {
			p.Restart = append(p.Restart, k)
		}
	}
	return p, nil
}

// Reloader re-reads a daemon's configuration on each signal and hands it
// to the daemon.
type Reloader struct {
	// Signal receives once per reload request (Signals.Reload).
	Signal <-chan struct{}
	Log    *slog.Logger
	Notify *Notifier // nil: none
	// Reload loads and validates the configuration and applies what can
	// change live, returning the plan it carried out. An error (an invalid
	// configuration) leaves everything as it was.
	Reload func(ctx context.Context) (ReloadPlan, error)
}

// Run answers reload requests until ctx ends; a daemon never dies of one.
func (r Reloader) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.Signal:
		}
		r.Log.Info("reloading configuration (SIGHUP)")
		if err := r.Notify.Send("RELOADING=1", "MONOTONIC_USEC="+monotonicUsec()); err != nil {
			r.Log.Warn("notifying systemd", "err", err)
		}
		p, err := r.Reload(ctx)
		switch {
		case err != nil:
			r.Log.Error("reload refused; the running configuration stays", "err", err)
		default:
			r.Log.Info("configuration reloaded", "applied", keyList(p.Live))
			if len(p.Restart) > 0 {
				r.Log.Warn("configuration changes that need a restart (not applied)", "keys", keyList(p.Restart))
			}
		}
		if err := r.Notify.Send("READY=1"); err != nil {
			r.Log.Warn("notifying systemd", "err", err)
		}
	}
}

func keyList(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ",")
}

// LiveReload makes a Reloader's Reload for options of type O: it loads
// fresh options (defaults, then load: file, environment, flags), plans
// the reload against the options the daemon started with and those in
// force, and hands the new options to apply, which changes what the live
// keys govern. Calls must not overlap (Reloader.Run makes them one at a
// time).
func LiveReload[O any](started O, defaults func() O, load func(*O) error, live []string,
	apply func(ctx context.Context, next O) error) func(context.Context) (ReloadPlan, error) {
	current := started
	return func(ctx context.Context) (ReloadPlan, error) {
		next := defaults()
		if err := load(&next); err != nil {
			return ReloadPlan{}, err
		}
		plan, err := PlanReload(started, current, next, live)
		if err != nil {
			return plan, err
		}
		if err := apply(ctx, next); err != nil {
			return plan, err
		}
		current = next
		return plan, nil
	}
}
