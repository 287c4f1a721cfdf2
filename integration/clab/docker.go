package clab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/openinof/inof/integration/topo"
)

// EnsureDocker starts dockerd unless `docker info` answers, and stops it
// by its pid when the test ends (SIGTERM, then SIGKILL after 30 s). There
// is no systemd to start it on these machines; starting it changes the
// root namespace's iptables (docs/containerlab.md), so only the tests that
// need Docker call it.
func EnsureDocker(t testing.TB) {
	t.Helper()
	if exec.Command("docker", "info").Run() == nil {
		return
	}
	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("inof-dockerd-%d.log", os.Getpid()))
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("dockerd")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start dockerd (apt-get install docker.io): %v", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); logf.Close(); close(exited) }()
	t.Cleanup(func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("stop dockerd: %v", err)
		}
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Errorf("dockerd (pid %d) did not stop within 30 s of SIGTERM: killed", cmd.Process.Pid)
			_ = cmd.Process.Kill()
			<-exited
		}
		if !t.Failed() {
			os.Remove(logPath)
		}
	})
	t.Logf("started dockerd (pid %d, log %s); it is stopped when the test ends", cmd.Process.Pid, logPath)
	if err := topo.Poll(60*time.Second, func() (bool, error) {
		select {
		case <-exited:
			return false, fmt.Errorf("dockerd exited: %v", waitErr)
		default:
		}
		out, err := exec.Command("docker", "info").CombinedOutput()
		return err == nil, fmt.Errorf("docker info: %v: %s", err, out)
	}); err != nil {
		t.Fatalf("%v (dockerd log: %s)", err, logPath)
	}
}
