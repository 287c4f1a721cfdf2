package lossless

import (
	"fmt"
	"path"
	"strings"
)

// RDMACMRoot is where the kernel's RDMA-CM configfs defaults live
// (Documentation/ABI/testing/configfs-rdma_cm): one directory per RDMA
// device, created with mkdir, with ports/<n>/default_roce_mode and
// default_roce_tos.
const RDMACMRoot = "/sys/kernel/config/rdma_cm"

// RoCEv2Mode is the default_roce_mode value for RoCE v2 (RoCE v1 has no IP
// header, so no DSCP to classify by).
const RoCEv2Mode = "RoCE v2"

// LinuxStep is one setting of a Linux host: an iproute2 dcb command (Argv),
// an mlx5 ECN sysfs write (SysfsPath, Value), an RDMA-CM configfs default
// of the device's RDMA port (RDMAAttr, RDMAValue) or a check that the
// device's MTU gives RDMA-CM the profile's RoCE path MTU (RoCEMTU). Comment,
// when set, explains the step; it is printed before it and changes nothing.
type LinuxStep struct {
	Comment []string
	// Argv is the command and its arguments, e.g. dcb pfc set dev IF ...
	Argv []string
	// Optional, when set, says why the command fails on some hosts that are
	// still configured correctly by the other steps: a failure is reported
	// and the remaining steps run.
	Optional string
	// SysfsPath is the file under /sys/class/net written with Value.
	SysfsPath string
	Value     uint32
	// Dev is the network device of an RDMA-CM or MTU step.
	Dev string
	// RDMAAttr (default_roce_mode, default_roce_tos) is written with
	// RDMAValue in the RDMA-CM port directory of Dev.
	RDMAAttr  string
	RDMAValue string
	// RoCEMTU, when set, is the RoCE path MTU Dev's MTU must give.
	RoCEMTU uint32
}

// String is the step as one shell command line.
func (s LinuxStep) String() string {
	switch {
	case s.SysfsPath != "":
		// Optional: a firmware or kernel without this knob must not stop a
		// set -e script before the RDMA-CM defaults (the RoCE ToS) below.
		return fmt.Sprintf(`echo %d > %s || echo "inof: %s: optional DCQCN step failed (the NIC keeps its value)" >&2`,
			s.Value, s.SysfsPath, s.SysfsPath)
	case s.RDMAAttr != "":
		return fmt.Sprintf("echo %q > %s/<RDMA device of %s>/ports/<port>/%s", s.RDMAValue, RDMACMRoot, s.Dev, s.RDMAAttr)
	case s.RoCEMTU != 0:
		return fmt.Sprintf("check that the MTU of %s gives a RoCE path MTU of %d", s.Dev, s.RoCEMTU)
	}
	line := strings.Join(s.Argv, " ")
	if s.Optional != "" {
		line += fmt.Sprintf(` || echo "inof: %s: optional step failed (%s)" >&2`, s.Argv[1], s.Optional)
	}
	return line
}

// RoCEPathMTU is the RoCE path MTU RDMA-CM uses on a device of this MTU
// (Linux iboe_get_mtu: the largest IB MTU that fits the MTU less 96 B of
// RoCEv2 headers), or 0 when not even 256 fits.
func RoCEPathMTU(mtu uint32) uint32 {
	for _, ib := range []uint32{4096, 2048, 1024, 512, 256} {
		if mtu >= ib+roceHeaderBytes {
			return ib
		}
	}
	return 0
}

// aptrustOptional is why `dcb apptrust` may fail on a host that is still
// set up right.
const apptrustOptional = "mlx5 has no apptrust operation and iproute2 before 6.2 no apptrust object; mlx5 trusts DSCP once the DSCP APP entries below exist"

// LinuxSteps lists, in order, what a Linux host runs to put dev in the port
// class of plan: trust and the full DSCP APP table, ETS, PFC with the mlx5
// buffer hint, the priority-to-buffer map, the DCQCN sysfs writes, then the
// RDMA-CM defaults (RoCE v2, the RoCE DSCP) and the RoCE MTU check.
func LinuxSteps(p Profile, plan PortPlan, dev string) []LinuxStep {
	var out []LinuxStep
	dcb := func(args ...string) { out = append(out, LinuxStep{Argv: append([]string{"dcb"}, args...)}) }

	dcb("apptrust", "set", "dev", dev, "order", p.RoCE.Trust)
	out[0].Optional = apptrustOptional
	if p.RoCE.Trust == "dscp" {
		args := []string{"app", "replace", "dev", dev, "dscp-prio"}
		full := dscpPriorities(p.hostDSCPMap())
		for d, prio := range full {
			args = append(args, fmt.Sprintf("%d:%d", d, prio))
		}
		dcb(args...)
		out[len(out)-1].Comment = []string{"all 64 DSCPs, so none keeps the NIC's default DSCP/8 priority (mlx5 switches to DSCP trust with the first entry)"}
	} else {
		dcb("app", "flush", "dev", dev, "dscp-prio")
		out[len(out)-1].Comment = []string{"no DSCP APP entries: mlx5 trusts PCP once the last one is gone"}
	}
	tsa := prioMap(func(tc uint8) string {
		if c, ok := p.trafficClass(tc); ok && c.Scheduler == SchedulerStrict {
			return "strict"
		}
		return "ets"
	})
	bw := prioMap(func(tc uint8) string {
		c, _ := p.trafficClass(tc)
		return fmt.Sprint(c.Weight)
	})
	prioTC := prioMap(func(prio uint8) string { return fmt.Sprint(p.PriorityToTC[prio]) })
	dcb(append(append(append(append(append([]string{"ets", "set", "dev", dev, "tc-tsa"}, tsa...), "tc-bw"), bw...), "prio-tc"), prioTC...)...)

	pfc := prioMap(func(prio uint8) string {
		if p.isLossless(prio) {
			return "on"
		}
		return "off"
	})
	dcb(append(append([]string{"pfc", "set", "dev", dev, "prio-pfc"}, pfc...), "delay", fmt.Sprint(plan.Port.CableMeters))...)
	out[len(out)-1].Comment = []string{
		"mlx5 reads the PFC delay as the cable length in metres and sizes the lossless buffer from it;",
		fmt.Sprintf("expect a lossless buffer of at least %d B (NIC xoff %d B); switch side: %s.",
			plan.NIC.MinBuffer, plan.NIC.Xoff, headroomSummary(plan)),
	}
	buf := prioMap(func(prio uint8) string {
		if p.isLossless(prio) {
			return "1"
		}
		return "0"
	})
	dcb(append([]string{"buffer", "set", "dev", dev, "prio-buffer"}, buf...)...)

	for _, s := range p.ECNSysfs() {
		out = append(out, LinuxStep{SysfsPath: path.Join("/sys/class/net", dev, "ecn", s.Path), Value: s.Value})
	}
	out = append(out,
		LinuxStep{Dev: dev, RDMAAttr: "default_roce_mode", RDMAValue: RoCEv2Mode},
		LinuxStep{Dev: dev, RDMAAttr: "default_roce_tos", RDMAValue: fmt.Sprint(uint32(p.RoCE.DSCP) << 2),
			Comment: []string{fmt.Sprintf("ToS %d = DSCP %d for RDMA-CM connections that set none (nvme-rdma without --tos)",
				uint32(p.RoCE.DSCP)<<2, p.RoCE.DSCP)}},
		LinuxStep{Dev: dev, RoCEMTU: p.RoCE.MTU},
	)
	return out
}

// LinuxScriptHead defines the shell functions LinuxScriptBlock's RDMA-CM
// and MTU steps use and inof_rc, the script's exit status.
const LinuxScriptHead = `inof_rc=0
# inof_rdma_port DEV prints DEV's RDMA-CM configfs port directory, creating
# its RDMA device's group. It returns 1 (and says so) when DEV has no RDMA
# device, 2 when RDMA-CM's configfs is missing.
inof_rdma_port() {
	ibdev=$(ls /sys/class/net/"$1"/device/infiniband 2>/dev/null | head -n 1)
	if [ -z "$ibdev" ]; then echo "inof: $1 has no RDMA device: RDMA-CM defaults and RoCE MTU not checked" >&2; return 1; fi
	if [ ! -d ` + RDMACMRoot + ` ]; then echo "inof: ` + RDMACMRoot + ` missing (modprobe rdma_cm; mount -t configfs none /sys/kernel/config)" >&2; return 2; fi
	port=$(( $(cat /sys/class/net/"$1"/dev_port 2>/dev/null || echo 0) + 1 ))
	mkdir -p ` + RDMACMRoot + `/"$ibdev"
	echo ` + RDMACMRoot + `/"$ibdev"/ports/"$port"
}
# inof_check_roce_mtu DEV MTU fails the script (at its end) when DEV's MTU
# gives RDMA-CM another RoCE path MTU (the MTU less 96 B of RoCEv2 headers).
inof_check_roce_mtu() {
	mtu=$(cat /sys/class/net/"$1"/mtu)
	for ib in 4096 2048 1024 512 256; do if [ $((mtu - 96)) -ge $ib ]; then break; fi; done
	if [ "$ib" -ne "$2" ]; then echo "inof: $1 has MTU $mtu: RDMA-CM uses a RoCE path MTU of $ib, the profile says $2" >&2; inof_rc=1; fi
}`

// renderLinux writes iproute2 dcb commands, mlx5 ECN sysfs writes and the
// RDMA-CM defaults, one block per interface, as a POSIX shell script.
func renderLinux(in renderInput) (Rendering, error) {
	p := in.p
	var ns notes
	ns.add("ECN marking (Kmin/Kmax/Pmax) is a switch setting; hosts react to marks with DCQCN")
	ns.add("no PFC watchdog on hosts (dcb has none; detection %d ms, restoration %d ms, action %s are switch settings)",
		p.Watchdog.DetectionMs, p.Watchdog.RestorationMs, p.Watchdog.Action)
	if p.RoCE.Trust == "pcp" {
		ns.add("trust pcp: RoCE takes its priority from the VLAN egress-qos-map of the RDMA netdev, which this script does not set")
	}
	var t text
	t.line("#!/bin/sh")
	t.line("# iNOF lossless profile %q for Linux hosts (platform %s): iproute2 dcb, mlx5 ECN sysfs, RDMA-CM configfs.", p.Name, in.pl.Name)
	t.line("set -e")
	t.line("%s", LinuxScriptHead)
	for _, plan := range in.plans {
		for _, dev := range plan.Port.Interfaces {
			t.line("")
			t.line("# %s (%s)", dev, portSummary(plan))
			t.b.WriteString(LinuxScriptBlock(dev, LinuxSteps(p, plan, dev)))
		}
	}
	t.line("")
	t.comments("# Not set on hosts: ", ns)
	t.line("exit $inof_rc")
	read, err := readLinux(t.bytes(), p)
	if err != nil {
		return Rendering{}, err
	}
	return Rendering{Text: t.bytes(), Notes: ns, Effective: read}, nil
}

// LinuxScriptBlock is one device's steps as shell lines (after
// LinuxScriptHead): the ECN writes only when the device has mlx5's ecn/
// directory, the RDMA-CM steps only when it has an RDMA device.
func LinuxScriptBlock(dev string, steps []LinuxStep) string {
	var t text
	inECN, inRDMA := false, false
	for _, s := range steps {
		if isECN := s.SysfsPath != ""; isECN != inECN {
			if isECN {
				t.line("if [ -d /sys/class/net/%s/ecn ]; then", dev)
			} else {
				t.line("else")
				t.line("\techo \"inof: %s has no mlx5 ecn/ directory: DCQCN not set\" >&2", dev)
				t.line("fi")
			}
			inECN = isECN
		}
		if isRDMA := s.RDMAAttr != "" || s.RoCEMTU != 0; isRDMA && !inRDMA {
			t.line("if rdma=$(inof_rdma_port %s); then", dev)
			inRDMA = true
		}
		indent := ""
		if inECN || inRDMA {
			indent = "\t"
		}
		for _, c := range s.Comment {
			t.line("%s# %s", indent, c)
		}
		switch {
		case s.RDMAAttr != "":
			t.line("%secho %q > \"$rdma/%s\"", indent, s.RDMAValue, s.RDMAAttr)
		case s.RoCEMTU != 0:
			t.line("%sinof_check_roce_mtu %s %d", indent, dev, s.RoCEMTU)
		default:
			t.line("%s%s", indent, s)
		}
	}
	if inRDMA {
		t.line("elif [ $? -eq 2 ]; then")
		t.line("\tinof_rc=1")
		t.line("fi")
	}
	return t.b.String()
}
