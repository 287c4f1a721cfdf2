package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/openinof/inof/integration/vm/internal/ctlproto"
)

const portName = ctlproto.PortName

// defaultTimeout bounds OpRun and OpHTTP requests that name no timeout.
const defaultTimeout = 60 * time.Second

// server answers control requests. Every reply goes through out, written
// by one goroutine; requests run concurrently.
type server struct {
	port *os.File
	out  chan ctlproto.Reply

	mu    sync.Mutex
	procs map[uint64]*os.Process // started processes by request ID
}

func newServer(port *os.File) *server {
	return &server{port: port, out: make(chan ctlproto.Reply, 256), procs: map[uint64]*os.Process{}}
}

// serve reads requests forever. A read fails while no host is connected
// to the port; it then waits and reads again with a fresh decoder.
func (s *server) serve() {
	go s.write()
	for {
		dec := json.NewDecoder(s.port)
		for {
			var req ctlproto.Request
			if err := dec.Decode(&req); err != nil {
				if !errors.Is(err, io.EOF) {
					logf("control read: %v", err)
				}
				break
			}
			go s.handle(req)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) write() {
	enc := json.NewEncoder(s.port)
	for r := range s.out {
		r.Uptime, r.TimeNS = uptime(), time.Now().UnixNano()
		if err := enc.Encode(r); err != nil {
			logf("control write: %v", err)
		}
	}
}

func (s *server) handle(req ctlproto.Request) {
	done := ctlproto.Reply{ID: req.ID, Done: true}
	switch req.Op {
	case ctlproto.OpPing:
	case ctlproto.OpRun:
		done = s.run(req)
	case ctlproto.OpStart:
		s.start(req) // sends its own replies
		return
	case ctlproto.OpSignal:
		done.Error = s.signal(req)
	case ctlproto.OpWrite:
		if err := writeFile(req.Path, req.Data, os.FileMode(req.Mode)); err != nil {
			done.Error = err.Error()
		}
	case ctlproto.OpHTTP:
		done = httpGet(req)
	case ctlproto.OpRead:
		done.Files, done.Error = readFiles(req.Argv)
	default:
		done.Error = fmt.Sprintf("unknown op %q", req.Op)
	}
	s.out <- done
}

func timeout(req ctlproto.Request) time.Duration {
	if req.TimeoutMS > 0 {
		return time.Duration(req.TimeoutMS) * time.Millisecond
	}
	return defaultTimeout
}

func (s *server) run(req ctlproto.Request) ctlproto.Reply {
	r := ctlproto.Reply{ID: req.ID, Done: true}
	if len(req.Argv) == 0 {
		r.Error = "run: empty argv"
		return r
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout(req))
	defer cancel()
	cmd := exec.CommandContext(ctx, req.Argv[0], req.Argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin = bytes.NewReader(req.Stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r.Stdout, r.Stderr = stdout.Bytes(), stderr.Bytes()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
		if ctx.Err() != nil {
			r.Error = fmt.Sprintf("run %s: killed after %s", req.Argv[0], timeout(req))
		}
	default:
		r.Code = -1
		r.Error = err.Error()
	}
	return r
}

// start runs a background process: a Started reply, then its output in
// chunks, then a Done reply with its exit code.
func (s *server) start(req ctlproto.Request) {
	fail := func(err error) { s.out <- ctlproto.Reply{ID: req.ID, Done: true, Code: -1, Error: err.Error()} }
	if len(req.Argv) == 0 {
		fail(errors.New("start: empty argv"))
		return
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		fail(err)
		return
	}
	cmd := exec.Command(req.Argv[0], req.Argv[1:]...)
	cmd.Stdout, cmd.Stderr = pw, pw
	// Its own process group, so a signal reaches a shell's children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		fail(err)
		return
	}
	s.mu.Lock()
	s.procs[req.ID] = cmd.Process
	s.mu.Unlock()
	s.out <- ctlproto.Reply{ID: req.ID, Started: true}
	buf := make([]byte, 16<<10)
	for {
		n, err := pr.Read(buf)
		if n > 0 {
			s.out <- ctlproto.Reply{ID: req.ID, Output: bytes.Clone(buf[:n])}
		}
		if err != nil {
			break
		}
	}
	pr.Close()
	err = cmd.Wait()
	s.mu.Lock()
	delete(s.procs, req.ID)
	s.mu.Unlock()
	r := ctlproto.Reply{ID: req.ID, Done: true}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.Code = exit.ExitCode()
	} else if err != nil {
		r.Code, r.Error = -1, err.Error()
	}
	s.out <- r
}

func (s *server) signal(req ctlproto.Request) string {
	s.mu.Lock()
	p := s.procs[req.Target]
	s.mu.Unlock()
	if p == nil {
		return fmt.Sprintf("signal: no running process started by request %d", req.Target)
	}
	// The whole process group (see start).
	if err := syscall.Kill(-p.Pid, syscall.Signal(req.Signal)); err != nil {
		return fmt.Sprintf("signal %d to %d: %v", req.Signal, p.Pid, err)
	}
	return ""
}

func writeFile(path string, data []byte, mode os.FileMode) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("write: path %q is not absolute", path)
	}
	if mode == 0 {
		mode = 0o644
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, mode)
}

// readFiles reads every file matching the glob patterns (at most
// ctlproto.MaxReadFile bytes of each); a file that cannot be read (gone
// meanwhile, a sysfs attribute that fails) is left out.
func readFiles(patterns []string) (map[string]string, string) {
	files := map[string]string{}
	for _, p := range patterns {
		ms, err := filepath.Glob(p)
		if err != nil {
			return nil, fmt.Sprintf("read: pattern %q: %v", p, err)
		}
		for _, m := range ms {
			f, err := os.Open(m)
			if err != nil {
				continue
			}
			b, err := io.ReadAll(io.LimitReader(f, ctlproto.MaxReadFile))
			f.Close()
			if err == nil {
				files[m] = string(b)
			}
		}
	}
	return files, ""
}

func httpGet(req ctlproto.Request) ctlproto.Reply {
	r := ctlproto.Reply{ID: req.ID, Done: true}
	c := &http.Client{Timeout: timeout(req)}
	resp, err := c.Get(req.URL)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer resp.Body.Close()
	r.Status = resp.StatusCode
	if r.Stdout, err = io.ReadAll(resp.Body); err != nil {
		r.Error = err.Error()
	}
	return r
}
