package hostagent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// argsExec records the arguments of the one program it runs.
type argsExec struct{ args *[]string }

func (e argsExec) Run(_ context.Context, _ string, args ...string) ([]byte, error) {
	*e.args = args
	return []byte(`{"device":"nvme3"}`), nil
}

// TestDHCHAPSecrets: a subsystem with secrets configured is connected with
// --dhchap-secret and --dhchap-ctrl-secret read from their files; another
// subsystem without; a secret file others may read, or one that is not a
// secret, is refused at start.
func TestDHCHAPSecrets(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hostKey := "DHHC-1:00:ia6zGodOr5SEG5tbAYVtBIHmkMbtbEIyEA64TTqmQpb0jCQq:"
	ctrlKey := "DHHC-1:01:NH9dA0qHMAAzQvKT0A3WVs3HY1ltFqjJqRB5GL6NDlFqNOhS:"
	auth := []NVMeAuth{{Subsystem: subNQN, HostSecretFile: write("host.key", hostKey+"\n", 0o600),
		CtrlSecretFile: write("ctrl.key", ctrlKey, 0o400)}}
	o := testOptions(t)
	o.NVMe.Auth = auth
	if err := o.Validate(); err != nil {
		t.Fatalf("valid secrets refused: %v", err)
	}
	for _, bad := range []NVMeAuth{
		{Subsystem: subNQN, HostSecretFile: write("open.key", hostKey, 0o644)},
		{Subsystem: subNQN, HostSecretFile: write("junk.key", "password1", 0o600)},
		{Subsystem: subNQN + ",nr_io_queues=1", HostSecretFile: auth[0].HostSecretFile},
		{Subsystem: subNQN},
	} {
		o.NVMe.Auth = []NVMeAuth{bad}
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "nvme.auth[0]") {
			t.Errorf("%+v: %v, want refused", bad, err)
		}
	}

	var args []string
	cli := &CLI{Exec: argsExec{&args}, Bin: "nvme"}
	p := Path{Transport: "tcp", TrAddr: "10.0.0.100", TrSvcID: "4420", HostTrAddr: "10.0.0.2", SubNQN: subNQN}
	h, c, err := authFor(auth, subNQN)
	if err != nil || h != hostKey || c != ctrlKey {
		t.Fatalf("authFor = %q, %q, %v", h, c, err)
	}
	if _, err := cli.Connect(context.Background(), p, ConnectParams{HostNQN: hostNQN, HostSecret: h, CtrlSecret: c}); err != nil {
		t.Fatal(err)
	}
	if i := slices.Index(args, "--dhchap-secret"); i < 0 || args[i+1] != hostKey {
		t.Errorf("args %q lack the host secret", args)
	}
	if i := slices.Index(args, "--dhchap-ctrl-secret"); i < 0 || args[i+1] != ctrlKey {
		t.Errorf("args %q lack the controller secret", args)
	}
	if h, c, err := authFor(auth, "nqn.2014-08.org.example:other"); err != nil || h != "" || c != "" {
		t.Errorf("another subsystem gets %q, %q, %v", h, c, err)
	}
	if err := os.Chmod(auth[0].HostSecretFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := authFor(auth, subNQN); err == nil {
		t.Error("a secret made readable by others after start is still used")
	}
}

// TestConnectWithDHCHAP: through the agent, a notification for a
// subsystem with secrets configured runs nvme connect with them.
func TestConnectWithDHCHAP(t *testing.T) {
	key := filepath.Join(t.TempDir(), "host.key")
	const secret = "DHHC-1:00:ia6zGodOr5SEG5tbAYVtBIHmkMbtbEIyEA64TTqmQpb0jCQq:"
	if err := os.WriteFile(key, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	o := testOptions(t)
	o.NVMe.Auth = []NVMeAuth{{Subsystem: subNQN, HostSecretFile: key}}
	nv := newFakeNVMe()
	h := start(t, o, newFakeClock(), nv)
	h.notify(active("10.0.0.100", 1))
	c := nv.expect(t, "connect")
	if i := slices.Index(c[0], "--dhchap-secret"); i < 0 || c[0][i+1] != secret || slices.Contains(c[0], "--dhchap-ctrl-secret") {
		t.Fatalf("connect %q", c[0])
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestSecretsRedacted: a failing nvme's error names its arguments but not
// the secrets.
func TestSecretsRedacted(t *testing.T) {
	_, err := ExecExecutor{}.Run(context.Background(), "false", "connect", "--dhchap-secret", "DHHC-1:00:s3cret:",
		"--dhchap-ctrl-secret", "DHHC-1:01:other:")
	if err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "other") ||
		!strings.Contains(err.Error(), "--dhchap-secret (secret)") {
		t.Errorf("error %v", err)
	}
}
