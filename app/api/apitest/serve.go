package apitest

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/openinof/inof/app/api"
)

// Serve serves b as opts say until the test ends; an empty opts.Socket and
// opts.Listen mean a unix socket in a temporary directory. It returns the
// server (for its addresses) and the socket path.
func Serve(t testing.TB, b api.Backend, opts api.ServeOptions) (*api.Server, string) {
	t.Helper()
	if opts.Socket == "" && opts.Listen == "" {
		dir, err := os.MkdirTemp("", "inofapi") // short: socket paths are limited to ~100 bytes
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		opts.Socket = filepath.Join(dir, "api.sock")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.UnixIdentities == nil {
		// Whoever runs the test is the admin "tester", root or not, so
		// that what the tests see does not depend on who runs them.
		opts.UnixIdentities = []api.UnixIdentity{{User: strconv.Itoa(os.Getuid()), Name: "tester", Role: api.RoleAdmin}}
	}
	s, err := api.NewServer(opts, b)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("api server: %v", err)
		}
	})
	return s, opts.Socket
}
