package topo

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// module is the import path the binaries are built from.
const module = "github.com/openinof/inof"

// binDir holds inofd, inof-host and inofctl once Main built them.
var binDir string

// buildErr is why Main could not build them.
var buildErr error

// Main builds the daemons once into a temporary directory, runs the tests
// and removes the directory. Call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(topo.Main(m)) }
//
// Without root nothing is built (the privileged tests skip anyway). A build
// failure is reported by Start, so tests that need no binary still run.
// With INOF_TOPO_BIN set to a directory holding the binaries, those are
// used instead of building (e.g. binaries built once for several packages).
func Main(m *testing.M) int {
	if os.Geteuid() != 0 {
		return m.Run()
	}
	if dir := os.Getenv("INOF_TOPO_BIN"); dir != "" {
		binDir = dir
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "inof-topo-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "topo: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir, buildErr = dir, Build(dir)
	return m.Run()
}

// Build runs `go build -o dir/ ./cmd/...` for this module.
func Build(dir string) error {
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), module+"/cmd/...")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s/cmd/...: %w\n%s", module, err, out)
	}
	return nil
}

// Binary returns the path of a built binary (inofd, inof-host, inofctl).
func Binary(name string) (string, error) {
	if buildErr != nil {
		return "", buildErr
	}
	if binDir == "" {
		return "", errors.New("binaries not built: call topo.Main from TestMain")
	}
	p := filepath.Join(binDir, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("binary %s: %w", name, err)
	}
	return p, nil
}

// HasSwitchRole reports whether the built inofd knows --role switch. An
// inofd without the role rejects the --role value before reading any
// configuration.
var HasSwitchRole = sync.OnceValues(hasSwitchRole)

func hasSwitchRole() (bool, error) {
	bin, err := Binary("inofd")
	if err != nil {
		return false, err
	}
	out, _ := exec.Command(bin, "--role", "switch", "--config", os.DevNull).CombinedOutput()
	return !strings.Contains(string(out), `--role "switch"`), nil
}

// HasReflectorAPI reports whether the built reflector accepts the api.socket
// configuration key (the gRPC API inofctl talks to). It loads a
// configuration that is invalid on purpose (no asn), so the daemon lists the
// problems and exits without touching the network; an unknown key is one
// of them.
var HasReflectorAPI = sync.OnceValues(hasReflectorAPI)

func hasReflectorAPI() (bool, error) {
	bin, err := Binary("inofd")
	if err != nil {
		return false, err
	}
	dir, err := os.MkdirTemp("", "inof-topo-probe-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "probe.yaml")
	if err := os.WriteFile(cfg, []byte("api:\n  socket: "+filepath.Join(dir, "api.sock")+"\n"), 0o600); err != nil {
		return false, err
	}
	out, _ := exec.Command(bin, "--role", "reflector", "--config", cfg).CombinedOutput()
	if !strings.Contains(string(out), "asn") {
		return false, fmt.Errorf("reflector configuration probe: unexpected output %q", out)
	}
	return !strings.Contains(string(out), "api"), nil
}

// BuildRelease builds this module's inofd as of commit (an older release,
// for rolling-upgrade scenarios) into dir and returns the binary's path.
// The commit's tree comes from the git repository the tests run in (git
// archive), and builds with the module cache the tests use.
func BuildRelease(commit, dir string) (string, error) {
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse --show-toplevel: %w", err)
	}
	archive := exec.Command("git", "archive", "--format=tar", commit)
	archive.Dir = strings.TrimSpace(string(top)) // from a subdirectory git archives only that
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	untar.Stdin = pipe
	var stderr strings.Builder
	archive.Stderr = &stderr
	if err := untar.Start(); err != nil {
		return "", err
	}
	if err := archive.Run(); err != nil {
		return "", fmt.Errorf("git archive %s: %w: %s", commit, err, stderr.String())
	}
	if err := untar.Wait(); err != nil {
		return "", fmt.Errorf("untar %s: %w", commit, err)
	}
	bin := filepath.Join(dir, "inofd")
	build := exec.Command("go", "build", "-o", bin, "./cmd/inofd")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build inofd at %s: %w\n%s", commit, err, out)
	}
	return bin, nil
}
