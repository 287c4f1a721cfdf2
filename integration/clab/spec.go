package clab

import "github.com/openinof/inof/integration/topo"

// BFD timers of the lab: a silent peer is detected after 5 × 300 ms.
const (
	labBFDInterval = "300ms"
	labBFDMult     = 5
)

// LabSpec is topo.DemoSpec as the checked-in lab (inof-demo.clab.yml) runs
// it. One thing differs from the namespace harness: BFD between switches
// and reflectors detects a silent peer in 1.5 s (5 × 300 ms) instead of
// 300 ms, because the lab's twelve containers share the machine's CPU with
// whatever else runs there, and a BFD packet late by a few hundred
// milliseconds would take a reflector session down (seen on a loaded
// 2-core machine: hosts told reason 7 instead of the link cut's reason 1).
func LabSpec() topo.Spec { return RelaxBFD(topo.DemoSpec()) }

// RelaxBFD returns spec with the lab's BFD timers set on every reflector
// and switch, after the Spec's own configuration hooks.
func RelaxBFD(spec topo.Spec) topo.Spec {
	refl, sw := spec.ReflectorConfig, spec.SwitchConfig
	spec.ReflectorConfig = func(name string, cfg map[string]any) {
		if refl != nil {
			refl(name, cfg)
		}
		cfg["bfd"] = map[string]any{"enabled": true, "desired_min_tx": labBFDInterval,
			"required_min_rx": labBFDInterval, "detect_mult": labBFDMult}
	}
	spec.SwitchConfig = func(name string, cfg map[string]any) {
		if sw != nil {
			sw(name, cfg)
		}
		cfg["bfd"] = map[string]any{"enabled": true, "desired_min_tx": labBFDInterval,
			"required_min_rx": labBFDInterval, "detect_mult": labBFDMult}
	}
	return spec
}
