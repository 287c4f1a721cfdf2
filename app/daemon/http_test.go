package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestHTTPServer: /metrics serves the given registry, /healthz follows the
// health function, the address is taken at once, and Run ends with ctx.
func TestHTTPServer(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_things_total", Help: "things"})
	reg.MustRegister(c)
	c.Add(3)
	var sick atomic.Bool
	s, err := ListenHTTP("127.0.0.1:0", reg, func() error {
		if sick.Load() {
			return errors.New("link closed")
		}
		return nil
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ListenHTTP(s.Addr().String(), reg, nil, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("second listener on a taken address")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	base := "http://" + s.Addr().String()
	if code, body := get(t, base+"/metrics"); code != 200 || !strings.Contains(body, "test_things_total 3") ||
		strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics %d:\n%s", code, body)
	}
	if code, body := get(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz %d %q", code, body)
	}
	sick.Store(true)
	if code, body := get(t, base+"/healthz"); code != 503 || !strings.Contains(body, "link closed") {
		t.Fatalf("/healthz when sick %d %q", code, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("still serving after Run returned")
	}
}
