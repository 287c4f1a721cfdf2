package topo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/openinof/inof/internal/netns"
)

// httpClient reaches a daemon's /metrics and /healthz inside its namespace.
type httpClient struct {
	addr string
	c    *http.Client
}

func newHTTPClient(ns *netns.NS, addr string) *httpClient {
	dial := func(ctx context.Context, network, a string) (conn net.Conn, err error) {
		err = ns.Do(func() error {
			conn, err = (&net.Dialer{}).DialContext(ctx, network, a)
			return err
		})
		return conn, err
	}
	// No keep-alive: a restarted daemon must not see an old connection.
	tr := &http.Transport{DialContext: dial, DisableKeepAlives: true}
	return &httpClient{addr: addr, c: &http.Client{Transport: tr, Timeout: 5 * time.Second}}
}

// HTTPGet fetches path from the node's metrics listener (inside its
// namespace) and returns the status code and body.
func (r *readings) HTTPGet(path string) (int, string, error) {
	resp, err := r.http.c.Get("http://" + r.http.addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// Metrics are the samples of one /metrics scrape.
type Metrics []Sample

// Sample is one line of the Prometheus text format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Metrics scrapes the node's /metrics.
func (r *readings) Metrics() (Metrics, error) {
	n := r.n
	code, body, err := r.HTTPGet("/metrics")
	if err != nil {
		return nil, fmt.Errorf("topo: %s /metrics: %w", n.Name, err)
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("topo: %s /metrics: status %d", n.Name, code)
	}
	return parseMetrics(body)
}

// Sum adds the samples named name whose labels include every pair of
// labels ("key", "value", …). found is false when none matched.
func (m Metrics) Sum(name string, labels ...string) (sum float64, found bool) {
next:
	for _, s := range m {
		if s.Name != name {
			continue
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if s.Labels[labels[i]] != labels[i+1] {
				continue next
			}
		}
		sum += s.Value
		found = true
	}
	return sum, found
}

// Metric scrapes the node and returns Sum(name, labels...); a series that
// does not exist reads 0.
func (r *readings) Metric(name string, labels ...string) (float64, error) {
	m, err := r.Metrics()
	if err != nil {
		return 0, err
	}
	v, _ := m.Sum(name, labels...)
	return v, nil
}

// WaitMetric polls the node's metric (as Metric) until cond holds.
func (r *readings) WaitMetric(timeout time.Duration, cond func(float64) bool, name string, labels ...string) (float64, error) {
	n := r.n
	var v float64
	err := Poll(timeout, func() (bool, error) {
		var err error
		if v, err = r.Metric(name, labels...); err != nil {
			return false, err
		}
		return cond(v), fmt.Errorf("value %v", v)
	})
	if err != nil {
		return v, fmt.Errorf("topo: %s: %s%v: %w", n.Name, name, labels, err)
	}
	return v, nil
}

// Notifications is an inof-host's count of complete notifications
// received for it (inof_host_notifications_received_total, every
// interface), of one state ("active", "inactive") or of both ("").
func (r *readings) Notifications(state string) (float64, error) {
	if state == "" {
		return r.Metric("inof_host_notifications_received_total")
	}
	return r.Metric("inof_host_notifications_received_total", "state", state)
}

// parseMetrics reads the Prometheus text exposition format (the subset
// client_golang writes: no timestamps).
func parseMetrics(body string) (Metrics, error) {
	var out Metrics
	for _, line := range strings.Split(body, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		s := Sample{Labels: map[string]string{}}
		rest := line
		if i := strings.IndexAny(line, "{ "); i < 0 {
			return nil, fmt.Errorf("topo: metrics line %q", line)
		} else {
			s.Name, rest = line[:i], line[i:]
		}
		if strings.HasPrefix(rest, "{") {
			var err error
			if rest, err = parseLabels(rest[1:], s.Labels); err != nil {
				return nil, fmt.Errorf("topo: metrics line %q: %w", line, err)
			}
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err != nil {
			return nil, fmt.Errorf("topo: metrics line %q: %w", line, err)
		}
		s.Value = v
		out = append(out, s)
	}
	return out, nil
}

// parseLabels reads `k="v",…}` into into and returns what follows the '}'.
func parseLabels(s string, into map[string]string) (string, error) {
	for {
		if strings.HasPrefix(s, "}") {
			return s[1:], nil
		}
		eq := strings.Index(s, `="`)
		if eq < 0 {
			return "", errors.New("label without value")
		}
		key := s[:eq]
		s = s[eq+2:]
		var val strings.Builder
		for {
			if s == "" {
				return "", errors.New("unterminated label value")
			}
			c := s[0]
			s = s[1:]
			if c == '"' {
				break
			}
			if c == '\\' && s != "" {
				switch s[0] {
				case 'n':
					c = '\n'
				default:
					c = s[0]
				}
				s = s[1:]
			}
			val.WriteByte(c)
		}
		into[key] = val.String()
		s = strings.TrimPrefix(s, ",")
	}
}

// Poll calls cond every 50 ms until it returns true or timeout passes, then
// returns the last error cond gave (or a timeout error).
func Poll(timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("condition not met")
			}
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
