//go:build privileged

package demo

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/integration/topo"
)

// story prints the demo's narrative on stdout: step headings, commands with
// their output, and one merged stream of what the fabric really did, read
// from the daemons' logs, the fake nvme-cli's call files and a reflector's
// event feed (`inofctl events --follow`).
type story struct {
	f     *topo.Fabric
	out   io.Writer
	start time.Time
	names *strings.Replacer
	label map[string]string // address → node name (and NIC, for dual-homed devices)

	mu     sync.Mutex // serialises printing and the offsets below
	logOff map[*topo.Node]int
	nvmOff map[*topo.Node]int

	evMu   sync.Mutex
	events []streamLine // read from the feed, not printed yet
	seen   []string     // every feed line read so far, formatted

	stop chan struct{}
	done chan struct{}
}

// streamLine is one thing that happened, ready to print.
type streamLine struct {
	at   time.Time
	who  string
	text string
}

// newStory names every address of the fabric after its node; times are
// told relative to start.
func newStory(f *topo.Fabric, start time.Time) *story {
	s := &story{f: f, out: os.Stdout, start: start, label: map[string]string{},
		logOff: map[*topo.Node]int{}, nvmOff: map[*topo.Node]int{}}
	for _, k := range []topo.Kind{topo.KindReflector, topo.KindSwitch} {
		for _, n := range f.Nodes(k) {
			s.label[n.Addr.String()] = n.Name
		}
	}
	for _, n := range f.Nodes(topo.KindHost) {
		for _, l := range n.Links {
			name := n.Name
			if len(n.Links) > 1 {
				name += "/" + l.IfName
			}
			s.label[l.Addr().String()] = name
		}
	}
	// Longest first, so 10.0.0.11 is never read as 10.0.0.1 followed by 1.
	addrs := make([]string, 0, len(s.label))
	for a := range s.label {
		addrs = append(addrs, a)
	}
	sort.Slice(addrs, func(i, j int) bool { return len(addrs[i]) > len(addrs[j]) })
	var pairs []string
	for _, a := range addrs {
		pairs = append(pairs, a, s.label[a]+"("+a+")")
	}
	s.names = strings.NewReplacer(pairs...)
	return s
}

// printf writes narrative text.
func (s *story) printf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.out, format, args...)
}

// step flushes what happened so far and prints a step heading.
func (s *story) step(format string, args ...any) {
	s.flush()
	s.printf("\n== "+format+"\n", args...)
}

// note flushes what happened so far and prints one line of explanation.
func (s *story) note(format string, args ...any) {
	s.flush()
	s.printf("   "+format+"\n", args...)
}

// inofctl runs inofctl against a reflector, printing the command line and
// its output; a failure fails the test.
func (s *story) inofctl(t *testing.T, rr *topo.Node, args ...string) string {
	t.Helper()
	s.flush()
	s.printf("\n   $ %s\n", s.inofctlLine(rr, args...))
	out, err := rr.Inofctl(args...)
	s.printf("%s", indent(out, "     "))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// inofctlLine is the command line that runs inofctl against rr from a
// shell where INOF_SERVER names rr1's socket (as the demo says at its
// start): another reflector's socket is named with --server.
func (s *story) inofctlLine(rr *topo.Node, args ...string) string {
	if rr.Name != "rr1" {
		args = append([]string{"--server", "unix://" + rr.APISocket()}, args...)
	}
	return "inofctl " + strings.Join(args, " ")
}

// nvmeLine is what inof-host ran, as it ran it (the fake nvme-cli is named
// nvme, as inof-host's nvme.path names the real one), with the node of
// the address after -a as a comment.
func (s *story) nvmeLine(args string) string {
	line := "inof-host ran: nvme " + args
	fs := strings.Fields(args)
	for i := 0; i+1 < len(fs); i++ {
		if fs[i] == "-a" && s.label[fs[i+1]] != "" {
			line += "   # " + s.label[fs[i+1]]
		}
	}
	return line
}

// indent prefixes every line of text.
func indent(text, prefix string) string {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return ""
	}
	return prefix + strings.ReplaceAll(text, "\n", "\n"+prefix) + "\n"
}

// follow starts `inofctl events --follow -o json` against rr and a reader
// of its lines, and the live printer, which flushes every 200 ms until
// close. The command is killed at close.
func (s *story) follow(t *testing.T, rr *topo.Node) {
	t.Helper()
	bin, err := topo.Binary("inofctl")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--server", "unix://"+rr.APISocket(), "-o", "json", "events", "--follow")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("inofctl events --follow: %v", err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			s.addEvent(rr.Name, sc.Bytes())
		}
	}()
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				s.flush()
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-read
		cmd.Wait()
	})
}

// close stops the live printer and prints what is left.
func (s *story) close() {
	if s.stop != nil {
		close(s.stop)
		<-s.done
		s.stop = nil
	}
	s.flush()
}

// event is the JSON form of one feed event (inofctl -o json).
type event struct {
	Seq        json.Number       `json:"seq"`
	Time       time.Time         `json:"time"`
	Kind       string            `json:"kind"`
	Subject    string            `json:"subject"`
	Message    string            `json:"message"`
	Attributes map[string]string `json:"attributes"`
}

// addEvent queues one line of the feed (an envelope of kind Event).
func (s *story) addEvent(rr string, line []byte) {
	var env struct {
		Item event `json:"item"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		env.Item = event{Time: time.Now(), Kind: "unreadable", Message: string(line)}
	}
	e := env.Item
	msg := e.Message
	if e.Subject != "" && !strings.Contains(msg, e.Subject) {
		msg = e.Subject + ": " + msg
	}
	text := fmt.Sprintf("event %-7s %s", e.Kind, s.names.Replace(msg))
	if e.Kind == "gap" {
		text = "event gap: " + e.Message
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	s.evMu.Lock()
	s.events = append(s.events, streamLine{at: e.Time, who: rr, text: text})
	s.seen = append(s.seen, text)
	s.evMu.Unlock()
}

// eventMark is the number of feed lines read so far: pass it to waitEvent
// to look only at later ones.
func (s *story) eventMark() int {
	s.evMu.Lock()
	defer s.evMu.Unlock()
	return len(s.seen)
}

// waitEvent waits until a feed line after mark containing every one of
// parts was read, and returns it.
func (s *story) waitEvent(timeout time.Duration, mark int, parts ...string) (string, error) {
	var found string
	err := topo.Poll(timeout, func() (bool, error) {
		s.evMu.Lock()
		defer s.evMu.Unlock()
	next:
		for _, l := range s.seen[min(mark, len(s.seen)):] {
			for _, p := range parts {
				if !strings.Contains(l, p) {
					continue next
				}
			}
			found = l
			return true, nil
		}
		return false, fmt.Errorf("no event with %q yet", parts)
	})
	return found, err
}

// flush prints, oldest first, every new line of interest of the logs, the
// fake nvme call files and the event feed.
func (s *story) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var lines []streamLine
	for _, k := range []topo.Kind{topo.KindSwitch, topo.KindHost} {
		for _, n := range s.f.Nodes(k) {
			log := n.Log()
			off := s.logOff[n]
			if off > len(log) {
				off = len(log)
			}
			end := strings.LastIndexByte(log[off:], '\n') + 1 + off
			for _, l := range strings.Split(log[off:end], "\n") {
				if sl, ok := s.logLine(n, l); ok {
					lines = append(lines, sl)
				}
			}
			s.logOff[n] = end
			if k != topo.KindHost {
				continue
			}
			calls := timedCalls(s.f, n)
			for _, c := range calls[min(s.nvmOff[n], len(calls)):] {
				if strings.HasPrefix(c.args, "list-subsys") {
					continue // before every action; counted in the per-host summaries
				}
				lines = append(lines, streamLine{at: c.at, who: n.Name, text: s.nvmeLine(c.args)})
			}
			s.nvmOff[n] = len(calls)
		}
	}
	s.evMu.Lock()
	lines = append(lines, s.events...)
	s.events = nil
	s.evMu.Unlock()
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].at.Before(lines[j].at) })
	for _, l := range lines {
		fmt.Fprintf(s.out, "   %+8.3fs  %-6s %s\n", l.at.Sub(s.start).Seconds(), l.who, l.text)
	}
}

// logLine turns a daemon's log line (slog text format) into a line of the
// story, if it is one of the few that tell what the daemon decided.
func (s *story) logLine(n *topo.Node, line string) (streamLine, bool) {
	kv := logfmt(line)
	at, err := time.Parse(time.RFC3339Nano, kv["time"])
	if err != nil {
		return streamLine{}, false
	}
	name := func(key string) string { return s.names.Replace(kv[key]) }
	var text string
	switch kv["msg"] {
	// switch agents
	case "device registered":
		if kv["event"] != "registered" {
			return streamLine{}, false // a refresh that changed something: not news here
		}
		text = fmt.Sprintf("sees %s register on port %s", name("device"), kv["port"])
	case "device left":
		text = fmt.Sprintf("sees %s leave port %s (reason %s)", name("device"), kv["port"], kv["reason"])
	case "notify":
		text = fmt.Sprintf("tells %s on %s: target %s is %s", name("host"), kv["port"], name("target"), strings.ToUpper(kv["state"]))
		if kv["state"] != "active" {
			text += " (reason " + kv["reason"] + ")"
		}
	case "zone configuration changed":
		text = "applies zone configuration change " + kv["object"]
	// inof-host
	case "connected":
		text = fmt.Sprintf("connected: controller %s over %s", kv["device"], s.path(kv["path"]))
	case "controller exists; not connecting again":
		text = fmt.Sprintf("controller %s over %s still there: not connecting again", kv["device"], s.path(kv["path"]))
	case "target inactive; controller kept for multipath and keep-alive":
		text = fmt.Sprintf("told %s is inactive (reason %s): controller kept, disconnect_on=%s acts only on forced reasons",
			name("target"), kv["reason"], kv["disconnect_on"])
	case "target inactive; disconnect after the restrain time":
		text = fmt.Sprintf("told %s is inactive (reason %s): disconnect in %s unless it comes back", name("target"), kv["reason"], kv["restrain_time"])
	case "disconnected":
		text = fmt.Sprintf("disconnected controller %s from %s", kv["device"], name("target"))
	case "link down", "link up":
		text = kv["msg"] + " on " + kv["interface"]
	default:
		return streamLine{}, false
	}
	return streamLine{at: at, who: n.Name, text: text}, true
}

// path names the target of inof-host's controller path
// ("tcp:ADDR:PORT from HOST nqn NQN"), leaving out host and NQN.
func (s *story) path(p string) string {
	first, _, _ := strings.Cut(p, " ")
	return s.names.Replace(first)
}

// call is one invocation of the fake nvme-cli, with the time the timing
// wrapper (timedNVMe) saw it.
type call struct {
	at   time.Time
	args string
}

// timedCalls reads a device's timed call file, oldest first.
func timedCalls(f *topo.Fabric, n *topo.Node) []call {
	b, err := os.ReadFile(filepath.Join(f.Dir, n.Name, "nvme", "timed-calls"))
	if err != nil {
		return nil
	}
	var out []call
	for _, l := range strings.Split(string(b), "\n") {
		stamp, args, ok := strings.Cut(l, " ")
		if !ok {
			continue // the last, empty or still being written
		}
		sec, nsec, _ := strings.Cut(stamp, ".")
		si, err1 := strconv.ParseInt(sec, 10, 64)
		ni, err2 := strconv.ParseInt(nsec, 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, call{at: time.Unix(si, ni), args: args})
	}
	return out
}

// logfmt splits a slog text line into its keys and values (quoted values
// unquoted).
func logfmt(line string) map[string]string {
	kv := map[string]string{}
	for line != "" {
		line = strings.TrimLeft(line, " ")
		eq := strings.IndexByte(line, '=')
		if eq <= 0 {
			break
		}
		key := line[:eq]
		line = line[eq+1:]
		var val string
		if strings.HasPrefix(line, `"`) {
			i := 1
			for i < len(line) && line[i] != '"' {
				if line[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(line) {
				i = len(line) - 1
			}
			raw := line[:i+1]
			if v, err := strconv.Unquote(raw); err == nil {
				val = v
			} else {
				val = strings.Trim(raw, `"`)
			}
			line = line[i+1:]
		} else {
			sp := strings.IndexByte(line, ' ')
			if sp < 0 {
				sp = len(line)
			}
			val, line = line[:sp], line[sp:]
		}
		kv[key] = val
	}
	return kv
}
