package vm

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"
)

// qmp is a QEMU Machine Protocol connection: one command at a time.
type qmp struct {
	mu   sync.Mutex
	conn net.Conn
	r    *bufio.Reader
}

// dialQMP connects to qemu's QMP socket and leaves capabilities
// negotiation mode.
func dialQMP(ctx context.Context, path string, exited <-chan struct{}) (*qmp, error) {
	conn, err := dialUnix(ctx, path, exited)
	if err != nil {
		return nil, err
	}
	q := &qmp{conn: conn, r: bufio.NewReader(conn)}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetReadDeadline(dl)
	}
	var greeting struct {
		QMP json.RawMessage `json:"QMP"`
	}
	line, err := q.r.ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &greeting)
	}
	if err != nil || greeting.QMP == nil {
		conn.Close()
		return nil, fmt.Errorf("vm: QMP greeting %q: %v", line, err)
	}
	if _, err := q.execute(ctx, "qmp_capabilities", nil); err != nil {
		conn.Close()
		return nil, err
	}
	return q, nil
}

// execute runs one QMP command and returns its "return" value; events that
// arrive meanwhile are skipped.
func (q *qmp) execute(ctx context.Context, cmd string, args any) (json.RawMessage, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(10 * time.Second)
	}
	q.conn.SetDeadline(dl)
	req := map[string]any{"execute": cmd}
	if args != nil {
		req["arguments"] = args
	}
	b, _ := json.Marshal(req)
	if _, err := q.conn.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("vm: QMP %s: %w", cmd, err)
	}
	for {
		line, err := q.r.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("vm: QMP %s: %w", cmd, err)
		}
		var resp struct {
			Return json.RawMessage `json:"return"`
			Error  *struct {
				Class string `json:"class"`
				Desc  string `json:"desc"`
			} `json:"error"`
			Event string `json:"event"`
		}
		if err := json.Unmarshal(line, &resp); err != nil {
			return nil, fmt.Errorf("vm: QMP %s: reply %q: %w", cmd, line, err)
		}
		switch {
		case resp.Event != "":
			continue
		case resp.Error != nil:
			return nil, fmt.Errorf("vm: QMP %s: %s: %s", cmd, resp.Error.Class, resp.Error.Desc)
		default:
			return resp.Return, nil
		}
	}
}

func (q *qmp) close() { q.conn.Close() }
