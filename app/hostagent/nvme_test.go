package hostagent

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeNVMeOnPath puts testdata/fake-nvme on PATH as "nvme" with a fresh
// state directory, which it returns.
func fakeNVMeOnPath(t *testing.T) string {
	t.Helper()
	script, err := filepath.Abs("testdata/fake-nvme")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(script, filepath.Join(bin, "nvme")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	t.Setenv("FAKE_NVME_DIR", dir)
	return dir
}

func fakeCalls(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestCLIRunsNVMe drives the real executor against the fake nvme script:
// the argument lists it receives and the parsing of what it prints.
func TestCLIRunsNVMe(t *testing.T) {
	dir := fakeNVMeOnPath(t)
	ctx := context.Background()
	cli := &CLI{Exec: ExecExecutor{}, Bin: "nvme"}
	cs, err := cli.ListControllers(ctx)
	if err != nil || len(cs) != 0 {
		t.Fatalf("empty list: %v %v", cs, err)
	}
	p := Path{Transport: "tcp", TrAddr: "10.0.0.100", TrSvcID: "4420", HostTrAddr: "10.0.0.2", SubNQN: subNQN}
	dev, err := cli.Connect(ctx, p, ConnectParams{HostNQN: hostNQN, CtrlLossTmo: 1800})
	if err != nil || dev != "nvme0" {
		t.Fatalf("connect: %q %v", dev, err)
	}
	cs, err = cli.ListControllers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Controller{{Path: p, Device: "nvme0", State: "live"}}; !slices.Equal(cs, want) {
		t.Fatalf("list %+v, want %+v", cs, want)
	}
	disc := `{"genctr":4,"records":[{"trtype":"tcp","adrfam":"ipv4","subtype":"nvme subsystem","treq":"not specified",` +
		`"portid":1,"trsvcid":"4420","subnqn":"nqn.x:a","traddr":"10.0.0.100","sectype":"none"}]}`
	if err := os.WriteFile(filepath.Join(dir, "discovery.json"), []byte(disc), 0o600); err != nil {
		t.Fatal(err)
	}
	recs, err := cli.Discover(ctx, "tcp", "10.0.0.100", "8009", "10.0.0.2", hostNQN)
	want := []DiscoveryRecord{{Transport: "tcp", Subtype: "nvme subsystem", TrAddr: "10.0.0.100", TrSvcID: "4420", SubNQN: "nqn.x:a"}}
	if err != nil || !slices.Equal(recs, want) {
		t.Fatalf("discover %+v %v", recs, err)
	}
	if err := cli.Disconnect(ctx, "nvme0"); err != nil {
		t.Fatal(err)
	}
	if err := cli.Disconnect(ctx, "nvme0"); err == nil || !strings.Contains(err.Error(), "No such device") {
		t.Fatalf("second disconnect: %v (want the tool's stderr in the error)", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fail-connect"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Connect(ctx, p, ConnectParams{HostNQN: hostNQN}); err == nil || !strings.Contains(err.Error(), "Connection refused") {
		t.Fatalf("failing connect: %v", err)
	}
	wantCalls := []string{
		"list-subsys -o json",
		"connect -t tcp -a 10.0.0.100 -s 4420 -w 10.0.0.2 -n " + subNQN + " -q " + hostNQN + " -l 1800 -o json",
		"list-subsys -o json",
		"discover -t tcp -a 10.0.0.100 -s 8009 -w 10.0.0.2 -q " + hostNQN + " -o json",
		"disconnect -d nvme0",
		"disconnect -d nvme0",
		"connect -t tcp -a 10.0.0.100 -s 4420 -w 10.0.0.2 -n " + subNQN + " -q " + hostNQN + " -o json",
	}
	if got := fakeCalls(t, dir); !slices.Equal(got, wantCalls) {
		t.Fatalf("calls\n got %q\nwant %q", got, wantCalls)
	}
}

// TestDisconnectRefusesOddDevice: only nvmeN names reach a command line.
func TestDisconnectRefusesOddDevice(t *testing.T) {
	nv := newFakeNVMe()
	cli := &CLI{Exec: nv, Bin: "nvme"}
	for _, d := range []string{"", "nvme", "nvme0n1", "nvme0 -n x", "/dev/nvme0", "sda"} {
		if err := cli.Disconnect(context.Background(), d); err == nil {
			t.Errorf("Disconnect(%q) accepted", d)
		}
	}
	nv.none(t)
}

// TestParseListSubsys: the JSON shapes nvme-cli prints.
func TestParseListSubsys(t *testing.T) {
	a := Controller{Path: Path{Transport: "tcp", TrAddr: "10.0.0.100", TrSvcID: "4420", HostTrAddr: "10.0.0.2", SubNQN: "nqn.x:a"}, Device: "nvme0", State: "live"}
	b := Controller{Path: Path{Transport: "rdma", TrAddr: "fd00::100", TrSvcID: "4420", HostTrAddr: "fd00::2", SubNQN: "nqn.x:a"}, Device: "nvme1", State: "connecting"}
	c := Controller{Path: Path{Transport: "tcp", TrAddr: "10.0.0.101", TrSvcID: "4420", SubNQN: "nqn.x:b"}, Device: "nvme2", State: "live"}
	for _, tc := range []struct {
		name, in string
		want     []Controller
	}{
		{"2.x array of hosts", `[{"HostNQN":"nqn.h","HostID":"1","Subsystems":[
			{"Name":"nvme-subsys0","NQN":"nqn.x:a","IOPolicy":"numa","Paths":[
				{"Name":"nvme0","Transport":"tcp","Address":"traddr=10.0.0.100,trsvcid=4420,host_traddr=10.0.0.2,src_addr=10.0.0.2","State":"live"},
				{"Name":"nvme1","Transport":"rdma","Address":"traddr=fd00::100,trsvcid=4420,host_traddr=fd00::2","State":"connecting"}]}]},
			{"HostNQN":"nqn.other","Subsystems":[{"Name":"nvme-subsys1","NQN":"nqn.x:b","Paths":[
				{"Name":"nvme2","Transport":"tcp","Address":"traddr=10.0.0.101,trsvcid=4420","State":"live"}]}]}]`,
			[]Controller{a, b, c}},
		{"2.x paths as a separate element", `[{"HostNQN":"nqn.h","Subsystems":[{"Name":"nvme-subsys0","NQN":"nqn.x:a"},
			{"Paths":[{"Name":"nvme0","Transport":"tcp","Address":"traddr=10.0.0.100,trsvcid=4420,host_traddr=10.0.0.2","State":"live"}]}]}]`,
			[]Controller{a}},
		{"1.x object", `{"Subsystems":[{"Name":"nvme-subsys2","NQN":"nqn.x:b","Paths":[
			{"Name":"nvme2","Transport":"tcp","Address":"traddr=10.0.0.101 trsvcid=4420","State":"live"}]}]}`,
			[]Controller{c}},
		{"empty", "[]\n", nil},
		{"nothing", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseListSubsys([]byte(tc.in))
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %+v %v\nwant %+v", got, err, tc.want)
			}
		})
	}
	for _, bad := range []string{"{", "[1,2]", `{"Subsystems":"x"}`, "Failed to scan topology"} {
		if _, err := parseListSubsys([]byte(bad)); err == nil {
			t.Errorf("parseListSubsys(%q) accepted", bad)
		}
	}
}

type failingExec struct{}

func (failingExec) Run(context.Context, string, ...string) ([]byte, error) {
	return nil, errors.New("exit status 1: Failed to scan topology: No such file or directory")
}

// TestListWithoutNVMeModule: list-subsys failing on a host without the
// nvme-subsystem class means no controllers; with the class present the
// failure is reported.
func TestListWithoutNVMeModule(t *testing.T) {
	cli := &CLI{Exec: failingExec{}, Bin: "nvme", SubsysClass: filepath.Join(t.TempDir(), "nvme-subsystem")}
	if cs, err := cli.ListControllers(context.Background()); err != nil || cs != nil {
		t.Fatalf("no class: %v %v", cs, err)
	}
	cli.SubsysClass = t.TempDir()
	if _, err := cli.ListControllers(context.Background()); err == nil {
		t.Fatal("class present: failure hidden")
	}
}

// TestRealNVMeList runs the installed nvme-cli, if any: on this kernel it
// must give a list (empty without NVMe-oF), not an error.
func TestRealNVMeList(t *testing.T) {
	bin, err := exec.LookPath("nvme")
	if err != nil {
		t.Skip("nvme-cli not installed")
	}
	if _, err := (&CLI{Exec: ExecExecutor{}, Bin: bin, SubsysClass: DefaultSubsysClass}).ListControllers(context.Background()); err != nil {
		t.Fatal(err)
	}
}
