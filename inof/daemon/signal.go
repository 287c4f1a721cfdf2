package daemon

import (
	"context"
	"os/signal"
	"syscall"
)

// SignalContext returns a context that ends on SIGTERM or SIGINT; stop
// releases the signal handler (a second signal then kills the process).
func SignalContext(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(parent, syscall.SIGTERM, syscall.SIGINT)
}
