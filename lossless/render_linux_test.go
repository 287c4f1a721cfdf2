package lossless

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// dcbVersion is an iproute2 release, e.g. 601 for 6.1.
type dcbVersion int

// dcbGrammar checks one `dcb` command line against the grammar of
// iproute2's dcb/ sources (dcb.c, dcb_app.c, dcb_apptrust.c, dcb_ets.c,
// dcb_pfc.c, dcb_buffer.c), as that release parses it: objects and
// commands, keywords, KEY:VALUE mappings with their key and value ranges
// ("all" as a key), and the checks dcb makes before it talks to the kernel
// (ETS shares 0–100 summing to 100 when a class is ets). It returns nil
// when the line parses.
func dcbGrammar(v dcbVersion, argv []string) error {
	if len(argv) < 5 || argv[0] != "dcb" || argv[3] != "dev" || argv[4] == "" {
		return fmt.Errorf("want dcb OBJECT COMMAND dev DEV ...: %q", argv)
	}
	object, command, args := argv[1], argv[2], argv[5:]
	mapping := func(args []string, maxKey int, value func(string) error) ([]string, map[int]string, error) {
		m := map[int]string{}
		for len(args) > 0 {
			k, val, ok := strings.Cut(args[0], ":")
			if !ok {
				break
			}
			keys := []int{}
			if k == "all" {
				for i := 0; i <= maxKey; i++ {
					keys = append(keys, i)
				}
			} else {
				n, err := strconv.Atoi(k)
				if err != nil || n < 0 || n > maxKey {
					return nil, nil, fmt.Errorf("key %q is expected to be 0..%d", k, maxKey)
				}
				keys = append(keys, n)
			}
			if err := value(val); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", args[0], err)
			}
			for _, n := range keys {
				m[n] = val
			}
			args = args[1:]
		}
		if len(m) == 0 {
			return nil, nil, fmt.Errorf("a keyword takes at least one KEY:VALUE")
		}
		return args, m, nil
	}
	uintUpTo := func(max int) func(string) error {
		return func(s string) error {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || n > max {
				return fmt.Errorf("%q is expected to be 0..%d", s, max)
			}
			return nil
		}
	}
	oneOf := func(words ...string) func(string) error {
		return func(s string) error {
			for _, w := range words {
				if s == w {
					return nil
				}
			}
			return fmt.Errorf("%q is not one of %v", s, words)
		}
	}
	switch object {
	case "app":
		switch command {
		case "add", "del", "replace", "flush", "show":
		default:
			return fmt.Errorf("dcb app: unknown command %q", command)
		}
		for len(args) > 0 {
			kw := args[0]
			if kw != "dscp-prio" {
				return fmt.Errorf("dcb app: keyword %q not rendered by us", kw)
			}
			if command == "flush" || command == "show" {
				args = args[1:]
				continue
			}
			var err error
			if args, _, err = mapping(args[1:], 63, uintUpTo(7)); err != nil {
				return fmt.Errorf("dscp-prio: %w", err)
			}
		}
	case "apptrust":
		if v < 602 {
			return fmt.Errorf(`Object "apptrust" is unknown (iproute2 %d.%d; apptrust came in 6.2)`, v/100, v%100)
		}
		if command != "set" || len(args) < 2 || args[0] != "order" {
			return fmt.Errorf("dcb apptrust set dev D order SELECTOR...")
		}
		seen := map[string]bool{}
		for _, sel := range args[1:] {
			if err := oneOf("ethtype", "stream-port", "dgram-port", "port", "dscp", "pcp")(sel); err != nil || seen[sel] {
				return fmt.Errorf("apptrust order: bad or repeated selector %q", sel)
			}
			seen[sel] = true
		}
	case "ets":
		if command != "set" {
			return fmt.Errorf("dcb ets: command %q not rendered by us", command)
		}
		tsa, bw := map[int]string{}, map[int]string{}
		for len(args) > 0 {
			kw, rest := args[0], args[1:]
			var m map[int]string
			var err error
			switch kw {
			case "tc-tsa":
				rest, m, err = mapping(rest, 7, oneOf("strict", "cb-shaper", "ets", "vendor"))
				for k, v := range m {
					tsa[k] = v
				}
			case "tc-bw":
				rest, m, err = mapping(rest, 7, uintUpTo(100))
				for k, v := range m {
					bw[k] = v
				}
			case "prio-tc":
				rest, _, err = mapping(rest, 7, uintUpTo(7))
			default:
				return fmt.Errorf("What is %q?", kw)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", kw, err)
			}
			args = rest
		}
		// dcb_ets_validate_bw: the sum over all 8 classes (the kernel's
		// current values where the line sets none: ours sets all 8).
		sum, hasETS := 0, false
		for tc := 0; tc < 8; tc++ {
			n, _ := strconv.Atoi(bw[tc])
			sum += n
			hasETS = hasETS || tsa[tc] == "ets"
		}
		if len(bw) != 8 || len(tsa) != 8 {
			return fmt.Errorf("tc-tsa and tc-bw must name all 8 classes here (dcb keeps the kernel's values for the rest)")
		}
		if sum != 100 && (hasETS || sum != 0) {
			return fmt.Errorf("Bandwidth percentages in tc-bw sum to %d%%, expected 100%%", sum)
		}
	case "pfc":
		if command != "set" {
			return fmt.Errorf("dcb pfc: command %q not rendered by us", command)
		}
		for len(args) > 0 {
			switch args[0] {
			case "prio-pfc":
				rest, _, err := mapping(args[1:], 7, oneOf("on", "off"))
				if err != nil {
					return fmt.Errorf("prio-pfc: %w", err)
				}
				args = rest
			case "delay", "macsec-bypass":
				if len(args) < 2 {
					return fmt.Errorf("%s needs a value", args[0])
				}
				if args[0] == "delay" {
					if err := uintUpTo(65535)(args[1]); err != nil {
						return fmt.Errorf("Invalid delay: %w", err)
					}
				}
				args = args[2:]
			default:
				return fmt.Errorf("What is %q?", args[0])
			}
		}
	case "buffer":
		if command != "set" || len(args) < 2 || args[0] != "prio-buffer" {
			return fmt.Errorf("dcb buffer set dev D prio-buffer P:B ...")
		}
		if rest, _, err := mapping(args[1:], 7, uintUpTo(7)); err != nil || len(rest) > 0 {
			return fmt.Errorf("prio-buffer: %v %v", err, rest)
		}
	default:
		return fmt.Errorf("Object %q is unknown", object)
	}
	return nil
}

// The grammar checker refuses what dcb refuses, so a pass means something.
func TestDCBGrammarRefuses(t *testing.T) {
	for _, line := range []string{
		"dcb ets set dev e0 tc-tsa all:ets tc-bw 0:50 1:0 2:0 3:40 4:0 5:0 6:0 7:0 prio-tc all:0",      // sums to 90
		"dcb ets set dev e0 tc-tsa all:wfq tc-bw all:0",                                                // no such TSA
		"dcb app replace dev e0 dscp-prio 64:3",                                                        // DSCP 0..63
		"dcb app replace dev e0 dscp-prio 24:8",                                                        // priority 0..7
		"dcb pfc set dev e0 prio-pfc 3:yes",                                                            // on|off
		"dcb pfc set dev e0 prio-pfc 3:on delay 70000",                                                 // u16
		"dcb buffer set dev e0 prio-buffer 3:8",                                                        // 8 buffers
		"dcb apptrust set dev e0 order dscp dscp",                                                      // repeated
		"dcb trust set dev e0 order dscp",                                                              // no such object
		"dcb pfc set dev e0 prio-pfc 3:on bogus 1",                                                     // What is "bogus"?
		"dcb ets set dev e0 tc-tsa 0:ets 1:ets 2:ets 3:ets 4:ets 5:ets 6:strict 7:ets tc-bw 0:50 3:50", // leaves 6 classes to the kernel
	} {
		if err := dcbGrammar(602, strings.Fields(line)); err == nil {
			t.Errorf("accepted %q", line)
		}
	}
	if err := dcbGrammar(601, strings.Fields("dcb apptrust set dev e0 order dscp")); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Errorf("iproute2 6.1 knows apptrust? %v", err)
	}
}

// Every dcb line of the rendering parses on iproute2 6.2 and later; on 6.1
// (Debian bookworm) only the apptrust line fails, and that step is
// optional, so a `set -e` script does not stop at it on ConnectX hosts
// (mlx5 has no apptrust operation either).
func TestLinuxCommandsParse(t *testing.T) {
	profiles := ruleProfiles(t, TargetLinux)
	for name, p := range profiles {
		plan, err := PlanPort(p, p.Ports[0])
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range LinuxSteps(p, plan, "ens1f0") {
			if s.Argv == nil {
				continue
			}
			n++
			if err := dcbGrammar(602, s.Argv); err != nil {
				t.Errorf("%s: %q: %v", name, s.Argv, err)
			}
			if err := dcbGrammar(601, s.Argv); err != nil && s.Optional == "" {
				t.Errorf("%s: %q fails on iproute2 6.1 and is not optional: %v", name, s.Argv, err)
			}
		}
		if n != 5 {
			t.Errorf("%s: %d dcb commands, want 5 (apptrust, app, ets, pfc, buffer)", name, n)
		}
	}
}

// The script is valid POSIX shell (/bin/sh parses it) and ends with the
// status of its checks.
func TestLinuxScriptIsShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	out, err := Render(goldenProfile(TargetLinux), TargetLinux)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "lossless.sh")
	if err := os.WriteFile(f, out, 0o755); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(sh, "-n", f).CombinedOutput(); err != nil {
		t.Fatalf("sh -n: %v: %s", err, msg)
	}
	if !strings.HasSuffix(string(out), "exit $inof_rc\n") {
		t.Error("the script does not end with its checks' status")
	}
}

// The rendered block of one device, run by /bin/sh against a fake /sys and
// configfs with a stand-in dcb that logs: ECN and RDMA-CM writes land where
// the kernel reads them (RoCE v2, ToS 96), and an MTU that gives RDMA-CM a
// RoCE path MTU of 1024 fails the script at its end, after every step ran.
func TestLinuxScriptRunsOnFakeTree(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	p := goldenProfile(TargetLinux)
	plan, err := PlanPort(p, p.Ports[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		mtu    string
		rdma   bool
		noCM   bool
		wantRC string
	}{{"jumbo", "9000", true, false, "0"}, {"mtu 1500", "1500", true, false, "1"}, {"no RDMA device", "1500", false, false, "0"},
		{"no RDMA-CM configfs", "9000", true, true, "1"}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			net, cm := filepath.Join(dir, "net"), filepath.Join(dir, "rdma_cm")
			files := map[string]string{filepath.Join(net, "ens1f0", "mtu"): c.mtu, filepath.Join(net, "ens1f0", "dev_port"): "0"}
			for _, s := range p.ECNSysfs() {
				files[filepath.Join(net, "ens1f0", "ecn", s.Path)] = "0"
			}
			if c.rdma {
				files[filepath.Join(net, "ens1f0", "device", "infiniband", "mlx5_0", "node_type")] = "1: CA"
			}
			if c.rdma && !c.noCM {
				for _, a := range []string{"default_roce_mode", "default_roce_tos"} {
					files[filepath.Join(cm, "mlx5_0", "ports", "1", a)] = "0"
				}
			}
			for f, v := range files {
				if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(f, []byte(v+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if !c.noCM {
				if err := os.MkdirAll(cm, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			script := "set -e\n" + `dcb() { echo "dcb $*" >> "$DCBLOG"; }` + "\n" + LinuxScriptHead + "\n" +
				LinuxScriptBlock("ens1f0", LinuxSteps(p, plan, "ens1f0")) + `echo "rc=$inof_rc"` + "\n"
			script = strings.ReplaceAll(script, RDMACMRoot, cm)
			script = strings.ReplaceAll(script, "/sys/class/net", net)
			cmd := exec.Command(sh, "-c", script)
			cmd.Env = append(os.Environ(), "DCBLOG="+filepath.Join(dir, "dcb.log"))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			if !strings.Contains(string(out), "rc="+c.wantRC+"\n") {
				t.Errorf("want rc=%s:\n%s", c.wantRC, out)
			}
			log, _ := os.ReadFile(filepath.Join(dir, "dcb.log"))
			if n := strings.Count(string(log), "\n"); n != 5 {
				t.Errorf("%d dcb calls, want 5:\n%s", n, log)
			}
			if got, _ := os.ReadFile(filepath.Join(net, "ens1f0", "ecn", "roce_np", "cnp_dscp")); strings.TrimSpace(string(got)) != "48" {
				t.Errorf("cnp_dscp = %q", got)
			}
			tos, _ := os.ReadFile(filepath.Join(cm, "mlx5_0", "ports", "1", "default_roce_tos"))
			mode, _ := os.ReadFile(filepath.Join(cm, "mlx5_0", "ports", "1", "default_roce_mode"))
			if c.rdma && !c.noCM && (strings.TrimSpace(string(tos)) != "96" || strings.TrimSpace(string(mode)) != "RoCE v2") {
				t.Errorf("RDMA-CM defaults: tos %q mode %q", tos, mode)
			}
			if c.mtu == "1500" && c.rdma && !strings.Contains(string(out), "RoCE path MTU of 1024, the profile says 4096") {
				t.Errorf("MTU mismatch not said:\n%s", out)
			}
		})
	}
}

func TestRoCEPathMTU(t *testing.T) {
	for mtu, want := range map[uint32]uint32{9100: 4096, 4192: 4096, 4191: 2048, 1500: 1024, 1120: 1024, 1119: 512, 300: 0} {
		if got := RoCEPathMTU(mtu); got != want {
			t.Errorf("RoCEPathMTU(%d) = %d, want %d", mtu, got, want)
		}
	}
}

// TestLinuxECNStepsDoNotStopScript runs the rendered block of one device
// in sh -e with the sysfs paths moved into a temporary directory whose ecn/
// directory exists but has none of mlx5's knobs (an older firmware): every
// DCQCN write fails, is reported, and the RDMA-CM defaults (the RoCE ToS)
// after them are still written.
func TestLinuxECNStepsDoNotStopScript(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("no sh: %v", err)
	}
	p := Default()
	plan, err := PlanPort(p, p.Ports[0])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	netDir, port := filepath.Join(dir, "net"), filepath.Join(dir, "rdma_port")
	for _, d := range []string{filepath.Join(netDir, "ens1f0", "ecn"), port} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	block := strings.ReplaceAll(LinuxScriptBlock("ens1f0", LinuxSteps(p, plan, "ens1f0")), "/sys/class/net/", netDir+"/")
	script := "set -e\ninof_rc=0\n" +
		"dcb() { :; }\n" + // the dcb steps have their own tests
		"inof_rdma_port() { echo " + port + "; }\n" +
		"inof_check_roce_mtu() { :; }\n" +
		block + "echo done\n"
	cmd := exec.Command(sh, "-c", script)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "done" {
		t.Fatalf("script stopped: %v; stdout %q; stderr:\n%s", err, out, stderr.String())
	}
	if n := strings.Count(stderr.String(), "optional DCQCN step failed"); n != len(p.ECNSysfs()) {
		t.Errorf("%d DCQCN failures reported, want %d:\n%s", n, len(p.ECNSysfs()), stderr.String())
	}
	tos, err := os.ReadFile(filepath.Join(port, "default_roce_tos"))
	if want := fmt.Sprint(uint32(p.RoCE.DSCP) << 2); err != nil || strings.TrimSpace(string(tos)) != want {
		t.Fatalf("default_roce_tos %q (%v), want %s", tos, err, want)
	}
}
