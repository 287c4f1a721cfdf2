package cli_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/api/apitest"
	"github.com/openinof/inof/cmd/inofctl/internal/cli"
	"github.com/openinof/inof/internal/cmdtest"
	"github.com/openinof/inof/internal/testpki"
	"github.com/openinof/inof/lossless"
)

// ctlAt runs inofctl with args against server and returns its exit code
// and standard error.
func ctlAt(t *testing.T, server string, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Main(context.Background(), append([]string{"--server", server, "--timeout", "20s"}, args...),
		cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb, Environ: []string{"HOME=" + t.TempDir()}})
	return code, errb.String()
}

// TestConnectionErrors: a failure to reach the API names its cause, on one
// line with exit 1: no socket, a socket file nobody accepts on, a server
// certificate from an unknown CA or for another name, a port without TLS;
// an Unavailable answer the server sent is its own message, not "cannot
// reach".
func TestConnectionErrors(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	pki := testpki.NewCA(t, dir, "server-ca")
	cert, key := pki.Server("inofd", net.IPv4(127, 0, 0, 1))
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := apitest.Serve(t, apitest.NewBackend(t), api.ServeOptions{Socket: filepath.Join(dir, "api.sock"),
		Listen: "127.0.0.1:0", TLSCertFile: cert, TLSKeyFile: key, TokenFile: token})
	tcp := s.TCPAddr().String()
	_, port, _ := net.SplitHostPort(tcp)
	plain, err := net.Listen("tcp", "127.0.0.1:0") // accepts, speaks no TLS
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	go func() {
		for {
			c, err := plain.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HTTP/1.0 400 nope\r\n\r\n"))
			c.Close()
		}
	}()
	for _, tc := range []struct {
		name   string
		server string
		args   []string
		want   string
	}{
		{"no socket", "unix://" + filepath.Join(dir, "none.sock"), nil, "no socket at " + filepath.Join(dir, "none.sock") + ": inofd is not running"},
		{"stale socket", "unix://" + stale, nil, "nothing accepts connections on " + stale},
		{"unknown CA", tcp, []string{"--token-file", token}, "signed by a CA inofctl does not trust: give that CA with --ca-file (INOF_CA_FILE)"},
		{"other name", "localhost:" + port, []string{"--token-file", token, "--ca-file", pki.File}, "--server-name (INOF_SERVER_NAME)"},
		{"no TLS", plain.Addr().String(), []string{"--token-file", token}, "does not speak TLS"},
	} {
		code, out := ctlAt(t, tc.server, append(tc.args, "zoning", "show")...)
		if code != 1 || !strings.HasPrefix(out, "inofctl: cannot reach the API: ") || !strings.Contains(out, tc.want) || strings.Count(out, "\n") != 1 {
			t.Errorf("%s: exit %d:\n%s", tc.name, code, out)
		}
	}
	// The daemon answers, with Unavailable of its own.
	_, sock := apitest.Serve(t, unsettled{apitest.NewBackend(t)}, api.ServeOptions{})
	code, out := ctlAt(t, "unix://"+sock, "lossless", "show")
	if code != 1 || strings.Contains(out, "cannot reach") || !strings.Contains(out, "has not settled yet") {
		t.Errorf("unsettled switch: exit %d:\n%s", code, out)
	}
}

// unsettled answers the lossless profile as a switch in direct mode does
// before its fabric view has settled.
type unsettled struct{ *apitest.Backend }

func (unsettled) LosslessProfile(context.Context) (lossless.Profile, error) {
	return lossless.Profile{}, status.Error(codes.Unavailable,
		"switch agent: the fabric view has not settled yet; the lossless profile may still arrive, retry")
}

// TestConnectionPermissionDenied: a user who may not connect to the socket
// is told so (the daemon is running), not asked whether it is. As root
// the check runs inofctl as nobody; as another user, on a socket made
// unreadable.
func TestConnectionPermissionDenied(t *testing.T) {
	_, sock := apitest.Serve(t, apitest.NewBackend(t), api.ServeOptions{})
	if os.Getuid() != 0 {
		if err := os.Chmod(sock, 0); err != nil {
			t.Fatal(err)
		}
		code, out := ctlAt(t, "unix://"+sock, "zoning", "show")
		if code != 1 || !strings.Contains(out, "permission denied on the socket "+sock+": inofd is running") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		return
	}
	bin := cmdtest.Build(t, "../..", "inofctl")
	for d := filepath.Dir(bin); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "--server", "unix://"+sock, "zoning", "show")
	cmd.Env = []string{"HOME=/nonexistent"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "permission denied on the socket "+sock+": inofd is running") {
		t.Fatalf("as nobody: %v:\n%s", err, out)
	}
}
