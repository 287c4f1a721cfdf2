package daemon

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
)

func TestRunWithHTTP(t *testing.T) {
	log, reg, err := Setup(io.Discard, DefaultLogOptions())
	if err != nil {
		t.Fatal(err)
	}
	// Find a free port, then let RunWithHTTP bind it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	boom := errors.New("boom")
	err = RunWithHTTP(context.Background(), addr, reg, func() error { return nil }, log, func(ctx context.Context) error {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("/metrics: %s", resp.Status)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("RunWithHTTP returned %v, want the run's error", err)
	}
	// The HTTP server is gone once RunWithHTTP returned.
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("HTTP server still listening")
	}
	// A busy address fails before run starts.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	ran := false
	if err := RunWithHTTP(context.Background(), busy.Addr().String(), reg, nil, log, func(context.Context) error { ran = true; return nil }); err == nil || ran {
		t.Fatalf("busy address: err %v, ran %v", err, ran)
	}
}
