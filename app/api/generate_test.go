package api_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The committed code in v1/ is what `go generate` makes from proto/: the
// test runs the //go:generate command of generate.go into a temporary
// directory and compares.
func TestGeneratedCodeUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the protoc plugins")
	}
	src, err := os.ReadFile("generate.go")
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, line := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(line, "//go:generate "); ok {
			args = strings.Fields(rest)
		}
	}
	out := t.TempDir()
	for i := range args {
		if args[i] == "-out" && i+1 < len(args) {
			args[i+1] = out
		}
	}
	if len(args) < 2 || !strings.Contains(strings.Join(args, " "), out) {
		t.Fatalf("no //go:generate line with -out in generate.go: %v", args)
	}
	cmd := exec.Command(args[0], args[1:]...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, msg)
	}
	for _, name := range []string{"inof.pb.go", "inof_grpc.pb.go"} {
		want, err := os.ReadFile(filepath.Join(out, "app", "api", "v1", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("v1", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("v1/%s is not what go generate makes from proto/: run make generate", name)
		}
	}
}
