package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/api/apiclient"
	"github.com/openinof/inof/app/api/apitest"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/internal/netns"
	"github.com/openinof/inof/internal/syncbuf"
	"github.com/openinof/inof/internal/testpki"
)

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// dial returns a client as inofctl makes it.
func dial(t *testing.T, o apiclient.DialOptions) inofv1.FabricClient {
	t.Helper()
	conn, err := apiclient.Dial(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return inofv1.NewFabricClient(conn)
}

// read and write are one call of each kind.
func read(c inofv1.FabricClient) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
	return err
}

func write(c inofv1.FabricClient, zone string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: []*inofv1.Edit{
		{Edit: &inofv1.Edit_CreateZone{CreateZone: &inofv1.CreateZone{Name: zone}}}}})
	return err
}

// TestCertificateIdentities: over TCP a client certificate is the caller's
// identity: an allowed admin writes, an allowed viewer only reads, a
// certificate of the CA whose subject is not allowed gets nothing, and one
// of another CA counts for nothing. Every refused call is
// logged with the reason, every commit with the identity (and its event
// carries it).
func TestCertificateIdentities(t *testing.T) {
	dir := t.TempDir()
	serverCA, server, key, _ := tlsFiles(t, dir)
	ca := testpki.NewCA(t, dir, "clients-ca")
	other := testpki.NewCA(t, dir, "other-ca")
	var logs syncbuf.Buffer
	s, _ := apitest.Serve(t, apitest.NewBackend(t), api.ServeOptions{Listen: "127.0.0.1:0", TLSCertFile: server,
		TLSKeyFile: key, ClientCA: ca.File, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Clients: []api.CertIdentity{{Subject: "alice", Role: api.RoleAdmin}, {Subject: "bob", Role: api.RoleViewer}}})
	as := func(p *testpki.CA, cn string) inofv1.FabricClient {
		cert, key := p.Client(cn)
		return dial(t, apiclient.DialOptions{Server: s.TCPAddr().String(), CAFile: serverCA, CertFile: cert, KeyFile: key})
	}
	alice, bob, mallory, eve := as(ca, "alice"), as(ca, "bob"), as(ca, "mallory"), as(other, "alice")
	if err := write(alice, "a"); err != nil {
		t.Fatalf("admin write: %v", err)
	}
	if err := read(bob); err != nil {
		t.Fatalf("viewer read: %v", err)
	}
	if err := write(bob, "b"); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("viewer write: %v", err)
	}
	if err := read(mallory); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("a subject not in the allow-list: %v", err)
	}
	// Go's TLS client does not even offer a certificate the server's CA
	// list does not name: the call arrives with no credential at all.
	if err := read(eve); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("a certificate of another CA: %v", err)
	}
	out := logs.String()
	for _, want := range []string{`msg="api: zoning committed" identity=alice via=certificate`,
		`msg="api: change refused: the identity may only read" identity=bob`,
		`msg="api: call refused"`, `certificate subject \"mallory\" is not in api.clients`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := bob.WatchEvents(ctx, &inofv1.WatchEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := st.Recv()
	if err != nil || ev.GetAttributes()["identity"] != "alice" || !strings.HasPrefix(ev.GetMessage(), "alice committed") {
		t.Fatalf("event %+v, %v", ev, err)
	}
	if ev, err = st.Recv(); err != nil || ev.GetKind() != "access" || ev.GetAttributes()["identity"] != "bob" {
		t.Fatalf("refusal event %+v, %v", ev, err)
	}
}

// TestNamedTokens: each token is an identity with a role; a revoked token
// (its entry removed from the file) is refused at the next call, with no
// restart; a call without any credential is refused.
func TestNamedTokens(t *testing.T) {
	dir := t.TempDir()
	serverCA, server, key, _ := tlsFiles(t, dir)
	tokens := filepath.Join(dir, "tokens.yaml")
	carol, dave := "carol-0123456789abcdef", "dave-0123456789abcdef"
	writeTokens := func(entries ...apiclient.TokenEntry) {
		var b strings.Builder
		b.WriteString("tokens:\n")
		for _, e := range entries {
			fmt.Fprintf(&b, "  - {name: %s, role: %s, sha256: %s}\n", e.Name, e.Role, e.SHA256)
		}
		writeFile(t, tokens, []byte(b.String()))
	}
	entry := func(name, role, tok string) apiclient.TokenEntry {
		return apiclient.TokenEntry{Name: name, Role: role, SHA256: apiclient.HashToken(tok)}
	}
	writeTokens(entry("carol", "admin", carol), entry("dave", "viewer", dave))
	s, _ := apitest.Serve(t, apitest.NewBackend(t), api.ServeOptions{Listen: "127.0.0.1:0", TLSCertFile: server,
		TLSKeyFile: key, TokensFile: tokens})
	as := func(tok string) inofv1.FabricClient {
		f := filepath.Join(t.TempDir(), "token")
		writeFile(t, f, []byte(tok))
		return dial(t, apiclient.DialOptions{Server: s.TCPAddr().String(), CAFile: serverCA, TokenFile: f})
	}
	c, d := as(carol), as(dave)
	if err := write(c, "a"); err != nil {
		t.Fatalf("admin token: %v", err)
	}
	if err := write(d, "b"); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("viewer token writing: %v", err)
	}
	if err := read(d); err != nil {
		t.Fatalf("viewer token reading: %v", err)
	}
	// Revoke carol: rewrite the file without her (a later modification time).
	time.Sleep(10 * time.Millisecond)
	writeTokens(entry("dave", "viewer", dave))
	if err := read(c); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("revoked token: %v", err)
	}
	if err := read(d); err != nil {
		t.Fatalf("the other token after the revocation: %v", err)
	}
	none := dial(t, apiclient.DialOptions{Server: s.TCPAddr().String(), CAFile: serverCA,
		TokenFile: writeEmptyish(t)})
	if err := read(none); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("a token nobody issued: %v", err)
	}
}

// writeEmptyish returns a token file holding a token no tokens file lists.
func writeEmptyish(t *testing.T) string {
	f := filepath.Join(t.TempDir(), "token")
	writeFile(t, f, []byte("never-issued"))
	return f
}

// peerChildEnv makes the test binary a client that calls the socket named
// in it and prints one line per call (see TestMain).
const peerChildEnv = "INOF_API_PEER_CHILD"

func TestMain(m *testing.M) {
	if sock := os.Getenv(peerChildEnv); sock != "" {
		peerChild(sock)
		return
	}
	os.Exit(m.Run())
}

// peerChild reads and writes once on the socket and prints the codes.
func peerChild(sock string) {
	conn, err := apiclient.Dial(apiclient.DialOptions{Server: "unix://" + sock})
	if err != nil {
		fmt.Println("dial", err)
		os.Exit(1)
	}
	c := inofv1.NewFabricClient(conn)
	fmt.Printf("read=%s write=%s\n", status.Code(read(c)), status.Code(write(c, "z")))
	os.Exit(0)
}

// TestUnixPeerIdentities: on the unix socket the caller is its process's
// user (SO_PEERCRED). With socket_group the group may connect (mode 0660,
// and never wider, even under umask 000); a member of that group that no
// api.unix_identities entry names gets nothing, one mapped as a viewer
// reads and cannot write. Runs as root (it starts a client as nobody).
func TestUnixPeerIdentities(t *testing.T) {
	netns.RequireRoot(t)
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	// nobody must reach the test binary and the socket's directory.
	dir, err := os.MkdirTemp("", "inofpeer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "api.test")
	copyFile(t, os.Args[0], bin)
	run := func(ids []api.UnixIdentity) string {
		t.Helper()
		sock := filepath.Join(dir, fmt.Sprintf("s%d.sock", len(ids)))
		apitest.Serve(t, apitest.NewBackend(t), api.ServeOptions{Socket: sock, SocketGroup: "nogroup", UnixIdentities: ids})
		st, err := os.Stat(sock)
		if err != nil {
			t.Fatal(err)
		}
		if m := st.Mode().Perm(); m != 0o660 || st.Sys().(*syscall.Stat_t).Gid != 65534 {
			t.Fatalf("socket mode %04o gid %d under umask 000, want 0660 and nogroup", m, st.Sys().(*syscall.Stat_t).Gid)
		}
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), peerChildEnv+"="+sock)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("client as nobody: %v: %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run(nil); got != "read=PermissionDenied write=PermissionDenied" {
		t.Fatalf("unmapped user: %s", got)
	}
	if got := run([]api.UnixIdentity{{Group: "nogroup", Name: "storage-viewers", Role: api.RoleViewer}}); got != "read=OK write=PermissionDenied" {
		t.Fatalf("viewer group: %s", got)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".api-sock-*")); len(leftovers) != 0 {
		t.Fatalf("private directories left: %v", leftovers)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
