package l2proto

import "time"

// pacer is a token bucket: rate tokens per second, at most burst saved up.
// It is not safe for concurrent use.
type pacer struct {
	interval time.Duration // time per token
	burst    float64
	tokens   float64
	last     time.Time
}

func newPacer(rate, burst int, now time.Time) *pacer {
	return &pacer{interval: time.Second / time.Duration(rate), burst: float64(burst), tokens: float64(burst), last: now}
}

// delay returns how long to wait at now before a token is available.
func (p *pacer) delay(now time.Time) time.Duration {
	p.refill(now)
	if p.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - p.tokens) * float64(p.interval))
}

// take spends one token (callers check delay first).
func (p *pacer) take(now time.Time) {
	p.refill(now)
	p.tokens--
}

func (p *pacer) refill(now time.Time) {
	if now.After(p.last) {
		p.tokens += float64(now.Sub(p.last)) / float64(p.interval)
		if p.tokens > p.burst {
			p.tokens = p.burst
		}
		p.last = now
	}
}

// allow spends a token if one is available at now.
func (p *pacer) allow(now time.Time) bool {
	if p.delay(now) > 0 {
		return false
	}
	p.take(now)
	return true
}
