//go:build privileged

package deploy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/integration/clab"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/internal/packaging"
)

// TestPrivImage builds the inofd container image (make image) and runs it
// as docs/operations.md shows, without a network (--network none): the
// entrypoint prints its version, a reflector starts from a mounted
// configuration, the image's inofctl talks to it through docker exec, and
// docker stop ends it cleanly (exit 0, marker "clean", JSON logs).
func TestPrivImage(t *testing.T) {
	requireRoot(t)
	requireTool(t, "docker", "docker.io")
	clab.EnsureDocker(t)
	tag := fmt.Sprintf("inof-test/inofd:%d", os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := packaging.BuildImage(ctx, packaging.ImageOptions{Tag: tag, Root: "../.."}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag).Run() })
	docker := func(args ...string) (string, error) {
		out, err := exec.Command("docker", args...).CombinedOutput()
		return string(out), err
	}
	if out, err := docker("run", "--rm", "--network", "none", tag, "--version"); err != nil || !strings.HasPrefix(out, "inofd ") {
		t.Fatalf("--version: %v %s", err, out)
	}
	cfg := filepath.Join(t.TempDir(), "inofd.yaml")
	if err := os.WriteFile(cfg, []byte("asn: 65000\nrouter_id: 10.0.0.1\nbfd:\n  enabled: false\nlisten:\n  addresses: [127.0.0.1]\n"+
		"clients:\n  - address: 10.0.1.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("inof-image-test-%d", os.Getpid())
	if out, err := docker("run", "-d", "--name", name, "--network", "none", "-v", cfg+":/etc/inof/inofd.yaml:ro",
		tag, "--role", "reflector", "--config", "/etc/inof/inofd.yaml"); err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", name).Run() })
	if err := topo.Poll(60*time.Second, func() (bool, error) {
		out, err := docker("exec", name, "inofctl", "version")
		return err == nil && strings.Contains(out, "role reflector"), fmt.Errorf("inofctl version: %v: %s", err, out)
	}); err != nil {
		logs, _ := docker("logs", name)
		t.Fatalf("%v\nlogs:\n%s", err, logs)
	}
	if out, err := docker("exec", name, "inofctl", "zone", "create", "red", "10.0.0.5", "--yes"); err != nil {
		t.Fatalf("zone create: %v %s", err, out)
	}
	if out, err := docker("stop", "-t", "30", name); err != nil {
		t.Fatalf("docker stop: %v %s", err, out)
	}
	code, _ := docker("inspect", "-f", "{{.State.ExitCode}}", name)
	logs, _ := docker("logs", name)
	if strings.TrimSpace(code) != "0" || !strings.Contains(logs, `"msg":"reflector stopped","clean":true`) ||
		strings.Contains(logs, `"level":"ERROR"`) {
		t.Fatalf("after docker stop: exit %s, logs:\n%s", code, logs)
	}
}
