package daemon

import (
	"io"
	"sync"
	"time"
)

// A daemon logs a line per device registration and per notification: at
// thousands of events a second one write(2) a line was 6–11 % of a switch
// agent's CPU (docs/history/performance.md, "Churn, fourth round"). The log sink
// gathers lines into few writes without holding one back for long.
const (
	// logFlushDelay is the longest a line waits in the sink.
	logFlushDelay = 10 * time.Millisecond
	// logFlushSize is the buffered size that is written at once.
	logFlushSize = 64 << 10
)

// logSink buffers writes to w: what is written goes out at most its delay
// later, at once when the buffer reaches its size, on Flush and on Close.
// Each Write is kept whole (a log record is one Write). It is safe for
// concurrent use.
type logSink struct {
	w     io.Writer
	delay time.Duration
	size  int

	mu     sync.Mutex
	buf    []byte
	armed  bool // a flush is scheduled
	closed bool // writes go straight to w
	timer  *time.Timer
}

func newLogSink(w io.Writer, delay time.Duration, size int) *logSink {
	s := &logSink{w: w, delay: delay, size: size}
	s.timer = time.AfterFunc(time.Hour, s.Flush)
	s.timer.Stop()
	return s
}

// Write buffers p; the error is that of an earlier write to w that this
// one had to make (a full buffer), if any.
func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.w.Write(p)
	}
	s.buf = append(s.buf, p...)
	if len(s.buf) >= s.size {
		return len(p), s.flushLocked()
	}
	if !s.armed {
		s.armed = true
		s.timer.Reset(s.delay)
	}
	return len(p), nil
}

// Flush writes what is buffered.
func (s *logSink) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.flushLocked() // the log has nowhere to report its own failure
}

func (s *logSink) flushLocked() error {
	s.armed = false
	if len(s.buf) == 0 {
		return nil
	}
	// A failed write loses what was gathered, not only one line: the log
	// has no better place to keep it.
	_, err := s.w.Write(s.buf)
	if cap(s.buf) > 4*s.size {
		s.buf = nil // a burst's buffer is not kept
	} else {
		s.buf = s.buf[:0]
	}
	return err
}

// Close writes what is buffered; later writes go straight to w.
func (s *logSink) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timer.Stop()
	_ = s.flushLocked()
	s.closed = true
}
