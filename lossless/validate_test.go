package lossless

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("default profile: %v", err)
	}
}

// Each case breaks one rule; Validate must report that rule on that field.
func TestValidateFailing(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(p *Profile)
		rule  string
		field string
	}{
		{"no name", func(p *Profile) { p.Name = "" }, RuleWellFormed, "name"},
		{"short priority map", func(p *Profile) { p.PriorityToTC = []uint8{0, 0, 0, 3} }, RuleWellFormed, "priority_to_tc"},
		{"tc out of range", func(p *Profile) { p.PriorityToTC[1] = 9 }, RuleWellFormed, "priority_to_tc[1]"},
		{"dscp out of range", func(p *Profile) { p.DSCPToPriority[70] = 0 }, RuleWellFormed, "dscp_to_priority[70]"},
		{"bad trust", func(p *Profile) { p.RoCE.Trust = "cos" }, RuleWellFormed, "roce.trust"},
		{"duplicate tc", func(p *Profile) {
			p.TrafficClasses = append(p.TrafficClasses, TrafficClass{TC: 6, Scheduler: SchedulerStrict})
		}, RuleWellFormed, "traffic_classes[3].tc"},
		{"bad scheduler", func(p *Profile) { p.TrafficClasses[2].Scheduler = "wfq" }, RuleWellFormed, "traffic_classes[2].scheduler"},
		{"no ports", func(p *Profile) { p.Ports = nil }, RuleWellFormed, "ports"},
		{"interface name with shell syntax", func(p *Profile) { p.Ports[1].Interfaces = []string{"eth0", "eth1;reboot"} }, RuleWellFormed, "ports[1].interfaces[1]"},
		{"empty interface name", func(p *Profile) { p.Ports[0].Interfaces = []string{""} }, RuleWellFormed, "ports[0].interfaces[0]"},

		{"Kmin above Kmax", func(p *Profile) { p.ECN.KminBytes = 500000 }, RuleECNThresholds, "ecn.kmin_bytes"},
		{"Pmax zero", func(p *Profile) { p.ECN.PmaxPercent = 0 }, RuleECNThresholds, "ecn.pmax_percent"},
		{"no reference speed", func(p *Profile) { p.ECN.ReferenceMbps = 0 }, RuleECNThresholds, "ecn.reference_mbps"},

		// 400G scales Kmax to 6.4 MB, above the 4 MB XOFF threshold.
		{"ECN after PFC at 400G", func(p *Profile) { p.Ports[0].SpeedMbps = 400000 }, RuleECNBeforePFC, "ports[0].speed_mbps"},
		{"Kmax above XOFF", func(p *Profile) { p.PFC.XoffThresholdBytes = 1600000 }, RuleECNBeforePFC, "ports[0].speed_mbps"},
		{"no XOFF threshold", func(p *Profile) { p.PFC.XoffThresholdBytes = 0 }, RuleECNBeforePFC, "pfc.xoff_threshold_bytes"},

		{"unknown speed", func(p *Profile) { p.Ports[0].SpeedMbps = 30000 }, RuleHeadroom, "ports[0].speed_mbps"},
		{"no cable", func(p *Profile) { p.Ports[1].CableMeters = 0 }, RuleHeadroom, "ports[1].cable_m"},
		{"cable too long for mlx5", func(p *Profile) { p.Ports[1].CableMeters = 1000 }, RuleHeadroom, "ports[1].cable_m"},
		// 100G/300m needs 138084 B: xon 18432 + NIC xoff 119652 (see the golden table).
		{"override too small", func(p *Profile) { p.Ports[2].HeadroomBytes = 100000 }, RuleHeadroom, "ports[2].headroom_bytes"},
		{"override larger than any switch buffer", func(p *Profile) { p.Ports[2].HeadroomBytes = 4000000000 }, RuleHeadroom, "ports[2].headroom_bytes"},
		{"no cell size", func(p *Profile) { p.SwitchBuffer.CellBytes = 0 }, RuleHeadroom, "switch_buffer.cell_bytes"},

		{"no lossless priority", func(p *Profile) { p.LosslessPriorities = nil }, RulePFCLosslessOnly, "lossless_priorities"},
		{"PFC on CNP priority", func(p *Profile) { p.LosslessPriorities = []uint8{3, 6} }, RulePFCLosslessOnly, "lossless_priorities[1]"},
		{"lossy priority shares lossless TC", func(p *Profile) { p.PriorityToTC[0] = 3 }, RulePFCLosslessOnly, "priority_to_tc[0]"},
		{"lossless priority on other TC number", func(p *Profile) {
			p.PriorityToTC[3] = 4
			p.TrafficClasses[1].TC = 4
		}, RulePFCLosslessOnly, "priority_to_tc[3]"},
		{"strict lossless class", func(p *Profile) {
			p.TrafficClasses[1] = TrafficClass{TC: 3, Scheduler: SchedulerStrict}
			p.TrafficClasses[0].Weight = 100
		}, RulePFCLosslessOnly, "traffic_classes[tc=3].scheduler"},

		{"CNP class not strict", func(p *Profile) {
			p.TrafficClasses[2] = TrafficClass{TC: 6, Scheduler: SchedulerETS, Weight: 10}
			p.TrafficClasses[0].Weight = 40
		}, RuleCNPStrict, "traffic_classes[tc=6].scheduler"},
		{"CNP class missing", func(p *Profile) { p.TrafficClasses = p.TrafficClasses[:2] }, RuleCNPStrict, "traffic_classes[tc=6].scheduler"},
		{"CNP class shared", func(p *Profile) { p.PriorityToTC[7] = 6 }, RuleCNPStrict, "priority_to_tc[7]"},

		{"ETS sum 90", func(p *Profile) { p.TrafficClasses[0].Weight = 40 }, RuleETSSum, "traffic_classes[*].weight"},
		{"ETS zero share", func(p *Profile) {
			p.TrafficClasses = append(p.TrafficClasses, TrafficClass{TC: 1, Scheduler: SchedulerETS})
		}, RuleETSSum, "traffic_classes[3].weight"},
		{"strict with weight", func(p *Profile) { p.TrafficClasses[2].Weight = 5 }, RuleETSSum, "traffic_classes[2].weight"},

		{"RoCE DSCP lossy", func(p *Profile) { p.RoCE.DSCP = 26 }, RuleDSCPAgree, "dscp_to_priority[26]"},
		{"CNP DSCP elsewhere", func(p *Profile) { p.DSCPToPriority[48] = 0 }, RuleDSCPAgree, "dscp_to_priority[48]"},
		{"host map disagrees", func(p *Profile) { p.HostDSCPToPriority = map[uint8]uint8{24: 3, 48: 6, 26: 3} }, RuleDSCPAgree, "host_dscp_to_priority[26]"},
		{"host map misses CNP", func(p *Profile) { p.HostDSCPToPriority = map[uint8]uint8{24: 3} }, RuleDSCPAgree, "host_dscp_to_priority[48]"},

		{"RoCE MTU not IB", func(p *Profile) { p.RoCE.MTU = 4000 }, RuleMTUFits, "roce.mtu"},
		{"port MTU too small for RoCE 4096", func(p *Profile) { p.Ports[0].MTU = 4191 }, RuleMTUFits, "ports[0].mtu"},
		{"port MTU above jumbo", func(p *Profile) { p.Ports[0].MTU = 9300 }, RuleMTUFits, "ports[0].mtu"},
		{"lossless MTU below RoCE MTU", func(p *Profile) { p.SwitchBuffer.LosslessMTU = 1024 }, RuleMTUFits, "switch_buffer.lossless_mtu"},

		{"detection too short", func(p *Profile) { p.Watchdog.DetectionMs = 99 }, RuleWatchdog, "watchdog.detection_ms"},
		{"detection too long", func(p *Profile) { p.Watchdog.DetectionMs = 5001 }, RuleWatchdog, "watchdog.detection_ms"},
		{"restoration too long", func(p *Profile) { p.Watchdog.RestorationMs = 60001 }, RuleWatchdog, "watchdog.restoration_ms"},
		{"restoration too short", func(p *Profile) { p.Watchdog.RestorationMs = 50 }, RuleWatchdog, "watchdog.restoration_ms"},
		{"poll slower than detection", func(p *Profile) { p.Watchdog.PollMs = 300 }, RuleWatchdog, "watchdog.poll_ms"},
		// sonic-pfcwd.yang: POLL_INTERVAL 100..1000 and restoration_time >= POLL_INTERVAL.
		{"poll above SONiC's 1000", func(p *Profile) {
			p.Watchdog = Watchdog{DetectionMs: 2000, RestorationMs: 2000, PollMs: 2000, Action: ActionDrop}
		}, RuleWatchdog, "watchdog.poll_ms"},
		{"poll below 100", func(p *Profile) { p.Watchdog.PollMs = 50 }, RuleWatchdog, "watchdog.poll_ms"},
		{"restoration shorter than poll", func(p *Profile) {
			p.Watchdog = Watchdog{DetectionMs: 400, RestorationMs: 200, PollMs: 400, Action: ActionDrop}
		}, RuleWatchdog, "watchdog.restoration_ms"},

		{"unscheduled traffic class", func(p *Profile) { p.PriorityToTC[1] = 1 }, RuleETSSum, "priority_to_tc[1]"},

		{"unknown platform target", func(p *Profile) { p.Platforms = map[string]string{"junos": "mx"} }, RulePlatform, "platforms.junos"},
		{"unknown platform", func(p *Profile) { p.Platforms = map[string]string{TargetSONiC: "spectrum-9"} }, RulePlatform, "platforms.sonic"},
		// 400G over 999 m needs about 1.2 MB per queue; the CE6855 family's hdrm stops at 30720 KB, so that fits,
		// but 32 such ports with two lossless queues exceed Spectrum-1's 16 MB.
		{"headroom beyond the buffer", func(p *Profile) {
			p.Platforms = map[string]string{TargetSONiC: "spectrum-1"}
			p.Ports[2].SpeedMbps, p.Ports[2].CableMeters = 400000, 999
			p.PFC.XoffThresholdBytes = 8000000
			for i := range 32 {
				p.Ports[2].Interfaces = append(p.Ports[2].Interfaces, fmt.Sprintf("Ethernet%d", 4*i))
			}
		}, RulePlatform, "platforms.sonic"},
		{"too many PFC queues for CE6866", func(p *Profile) {
			p.Platforms = map[string]string{TargetHuawei: "ce6866"}
			p.LosslessPriorities = []uint8{2, 3, 4, 5}
			p.PriorityToTC = []uint8{0, 0, 2, 3, 4, 5, 6, 0}
			p.TrafficClasses = []TrafficClass{
				{TC: 0, Scheduler: SchedulerETS, Weight: 20}, {TC: 2, Scheduler: SchedulerETS, Weight: 20},
				{TC: 3, Scheduler: SchedulerETS, Weight: 20}, {TC: 4, Scheduler: SchedulerETS, Weight: 20},
				{TC: 5, Scheduler: SchedulerETS, Weight: 20}, {TC: 6, Scheduler: SchedulerStrict},
			}
		}, RulePlatform, "platforms.huawei"},
		{"unknown action", func(p *Profile) { p.Watchdog.Action = "shutdown" }, RuleWatchdog, "watchdog.action"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Default()
			c.edit(&p)
			err := p.Validate()
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("Validate() = %v, want Problems", err)
			}
			for _, pr := range ps.Rules(c.rule) {
				if pr.Field == c.field {
					if pr.Detail == "" || pr.Fix == "" || pr.Value == "" {
						t.Errorf("problem lacks detail, fix or value: %+v", pr)
					}
					return
				}
			}
			t.Errorf("no %s problem on %s; got:\n%v", c.rule, c.field, err)
		})
	}
}

// Each case is a legal variation near a rule's edge; it must validate.
func TestValidatePassing(t *testing.T) {
	cases := []struct {
		name string
		edit func(p *Profile)
	}{
		{"two lossless priorities 3 and 4", func(p *Profile) {
			p.LosslessPriorities = []uint8{3, 4}
			p.PriorityToTC[4] = 4
			p.TrafficClasses = []TrafficClass{
				{TC: 0, Scheduler: SchedulerETS, Weight: 40},
				{TC: 3, Scheduler: SchedulerETS, Weight: 30},
				{TC: 4, Scheduler: SchedulerETS, Weight: 30},
				{TC: 6, Scheduler: SchedulerStrict},
			}
		}},
		{"ECN Kmax just below XOFF", func(p *Profile) { p.PFC.XoffThresholdBytes = 1600001 }},
		{"400G with a larger XOFF threshold", func(p *Profile) {
			p.Ports[0].SpeedMbps = 400000
			p.PFC.XoffThresholdBytes = 8000000
		}},
		{"override covers need", func(p *Profile) { p.Ports[2].HeadroomBytes = 140288 }},
		{"cable 999 m", func(p *Profile) { p.Ports[2].CableMeters = 999 }},
		{"host map equal to switch map", func(p *Profile) { p.HostDSCPToPriority = map[uint8]uint8{24: 3, 48: 6} }},
		{"RoCE 1024 with MTU 1500", func(p *Profile) {
			p.RoCE.MTU = 1024
			for i := range p.Ports {
				p.Ports[i].MTU = 1500
			}
		}},
		{"port MTU exactly RoCE + 96", func(p *Profile) { p.Ports[0].MTU = 4192 }},
		{"port MTU 9216", func(p *Profile) { p.Ports[0].MTU = 9216 }},
		{"watchdog at range edges", func(p *Profile) {
			p.Watchdog = Watchdog{DetectionMs: 5000, RestorationMs: 60000, PollMs: 1000, Action: ActionForward}
		}},
		{"watchdog minimums", func(p *Profile) {
			p.Watchdog = Watchdog{DetectionMs: 100, RestorationMs: 100, PollMs: 100, Action: ActionAlert}
		}},
		{"pcp trust", func(p *Profile) { p.RoCE.Trust = "pcp" }},
		{"switch interface names", func(p *Profile) {
			p.Ports[0].Interfaces = []string{"HundredGigE1/0/1", "Ethernet0", "swp1", "ens1f0np0", "100GE1/0/1:1"}
		}},
		{"three ETS classes summing to 100", func(p *Profile) {
			p.PriorityToTC[1] = 1
			p.TrafficClasses = append(p.TrafficClasses, TrafficClass{TC: 1, Scheduler: SchedulerETS, Weight: 20})
			p.TrafficClasses[0].Weight = 30
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Default()
			c.edit(&p)
			if err := p.Validate(); err != nil {
				t.Errorf("Validate(): %v", err)
			}
		})
	}
}

// Validate reports every problem at once, each with field, value, rule and fix.
func TestValidateReportsAll(t *testing.T) {
	p := Default()
	p.Watchdog.Action = "x"
	p.ECN.PmaxPercent = 0
	p.TrafficClasses[0].Weight = 10
	err := p.Validate()
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 3 {
		t.Fatalf("got %v, want 3 problems", err)
	}
	msg := err.Error()
	for _, want := range []string{"watchdog.action = x", "[watchdog-ranges]", "fix: use drop", "3 problem(s)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
}
