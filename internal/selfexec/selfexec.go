// Package selfexec runs the current test binary again as a child process,
// in a role its TestMain picks from an environment variable, for tests that
// must kill a real process (crash safety, graceful restart).
package selfexec

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// Child is a running copy of the test binary.
type Child struct {
	cmd  *exec.Cmd
	once sync.Once
}

// Start re-executes the test binary with the extra environment entries
// ("KEY=value"), waits for the first line it prints on stdout and returns
// it without the newline; the rest of its output is discarded (stderr goes
// to the test's stderr). The child is killed when the test ends.
func Start(tb testing.TB, env ...string) (*Child, string) {
	tb.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start child: %v", err)
	}
	c := &Child{cmd: cmd}
	tb.Cleanup(c.Kill)
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	if err != nil {
		c.Kill()
		tb.Fatalf("child printed %q before %v", line, err)
	}
	go io.Copy(io.Discard, r)
	return c, strings.TrimSuffix(line, "\n")
}

// Signal sends sig to the child: SIGSTOP makes it hang as a stuck process
// does (its sockets stay open, its kernel still acknowledges what arrives),
// SIGCONT lets it go on.
func (c *Child) Signal(sig os.Signal) error { return c.cmd.Process.Signal(sig) }

// Kill sends SIGKILL (no clean shutdown of any kind) and reaps the child.
func (c *Child) Kill() {
	c.once.Do(func() {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	})
}
