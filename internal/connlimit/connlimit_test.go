package connlimit

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Counter != nil {
		return d.GetCounter().GetValue()
	}
	return d.GetGauge().GetValue()
}

// TestLimits: on a real loopback listener, a source past its share and
// anyone past the total are closed at once and counted; a closed
// connection gives its slot back.
func TestLimits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	l, err := New(ln, Options{Name: "test", MaxConns: 3, MaxPerSource: 2, Registry: reg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	// A second listener on the same registry shares the metrics.
	if _, err := New(ln, Options{Name: "other", MaxConns: 1, MaxPerSource: 1, Registry: reg}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func(src string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	closedByServer := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(10 * time.Second)) // a bound on a failure only
		_, err := c.Read(make([]byte, 1))
		return err == io.EOF
	}
	a1, a2 := dial("127.0.0.1"), dial("127.0.0.1")
	s1, s2 := <-accepted, <-accepted
	if a3 := dial("127.0.0.1"); !closedByServer(a3) {
		t.Error("a third connection of one source was not closed")
	}
	dial("127.0.0.2")
	s3 := <-accepted
	if b2 := dial("127.0.0.3"); !closedByServer(b2) {
		t.Error("a connection past the total was not closed")
	}
	if got := value(t, l.refused.WithLabelValues("test", "source")); got != 1 {
		t.Errorf("refused source = %v", got)
	}
	if got := value(t, l.refused.WithLabelValues("test", "total")); got != 1 {
		t.Errorf("refused total = %v", got)
	}
	if l.Held() != 3 || value(t, l.held) != 3 {
		t.Errorf("held %d", l.Held())
	}
	s1.Close()
	s1.Close() // twice: one slot back
	if l.Held() != 2 {
		t.Errorf("held %d after a close", l.Held())
	}
	dial("127.0.0.1")
	<-accepted
	_, _, _ = a1, a2, s2
	s3.Close()
}
