package daemon

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

func TestRunServesHTTP(t *testing.T) {
	p, err := Setup(io.Discard, "test", DefaultLogOptions())
	if err != nil {
		t.Fatal(err)
	}
	log, reg := p.Log, p.Registry
	// Find a free port, then let Run bind it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	boom := errors.New("boom")
	o := RunOptions{MetricsListen: addr, Registry: reg, Health: func() error { return nil }, Logger: log}
	err = Run(context.Background(), o, func(ctx context.Context) error {
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
		t.Fatalf("Run returned %v, want the main runner's error", err)
	}
	// The HTTP server is gone once Run returned.
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("HTTP server still listening")
	}
	// A busy address fails before anything runs.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	ran := false
	o.MetricsListen = busy.Addr().String()
	if err := Run(context.Background(), o, func(context.Context) error { ran = true; return nil }); err == nil || ran {
		t.Fatalf("busy address: err %v, ran %v", err, ran)
	}
}

// TestRunStopsBesideFirst: when the context ends, the Beside runners have
// returned before the main runner's context ends; a Beside runner that
// fails ends the main runner, and its error is returned.
func TestRunStopsBesideFirst(t *testing.T) {
	p, err := Setup(io.Discard, "test", DefaultLogOptions())
	if err != nil {
		t.Fatal(err)
	}
	log := p.Log
	ctx, cancel := context.WithCancel(context.Background())
	besideDone := make(chan struct{})
	started := make(chan struct{})
	o := RunOptions{Logger: log, Beside: []Runner{func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		close(besideDone)
		return nil
	}}}
	go func() { <-started; cancel() }()
	err = Run(ctx, o, func(ctx context.Context) error {
		<-ctx.Done()
		select {
		case <-besideDone:
			return nil
		default:
			return errors.New("main runner stopped before the beside runner returned")
		}
	})
	if err != nil {
		t.Fatal(err)
	}

	boom := errors.New("api failed")
	o.Beside = []Runner{func(context.Context) error { return boom }}
	mainEnded := make(chan struct{})
	err = Run(context.Background(), o, func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			close(mainEnded)
			return nil
		case <-time.After(time.Minute): // only a broken Run gets here
			return errors.New("main runner not stopped after the beside runner failed")
		}
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Run returned %v, want the beside runner's error", err)
	}
	<-mainEnded
}
