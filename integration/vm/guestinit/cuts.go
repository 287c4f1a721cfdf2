package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openinof/inof/integration/vm/internal/ctlproto"
)

// cutsOptions are the cut runner's flags.
type cutsOptions struct {
	paths    []string // target addresses of the paths, the first is cut
	iopolicy string
	n        int
	links    []nsLink // the switch ports the cut sets down (and the restore up)
	kill     string   // a pid file: the cut also SIGKILLs that process
	restart  string   // a shell command the restore runs after the links are up
	cutSh    string   // a shell command the cut runs after the links and the kill
	gone     bool     // the window ends when the path's controller is removed
	notify   []string // the agents' logs: when was the host told (NotifiedMS)
	rejoin   logMark  // after the restore, wait for this log line (RejoinMS)
	settle   time.Duration
	after    time.Duration
	hold     time.Duration
	back     time.Duration
	ready    time.Duration
	write    bool
	bs       int
	span     int64
}

// cuts waits until a live controller runs to every address of -paths and
// their namespace's block device exists, sets the I/O policy, starts one
// I/O at a time on the device (random reads, or with -write sequence-
// numbered writes), and then makes -n cuts of the first path, each: a
// settle window with nothing broken (the floor), the -link port set down,
// the window until the path has left live and I/O has gone on for -after
// (the stall), the port set up and the wait until the path is live
// again. With -write, the writes pause after each cut and every block
// written is read back: it must hold the last acknowledged write to it or
// a later one. It prints one ctlproto.CutReport line per cut and
// ctlproto.CutsDone at the end.
//
// Everything is paced and timed by the guest's own clock, so in
// instruction-counted time (vm.Icount) the figures and the pacing do not
// depend on how busy the host machine is.
func cuts(args []string) int {
	fs := flag.NewFlagSet("cuts", flag.ContinueOnError)
	var o cutsOptions
	paths := fs.String("paths", "", "comma-separated target addresses of the paths; the first is cut")
	fs.StringVar(&o.iopolicy, "iopolicy", "", "native multipath I/O policy to set (round-robin, numa, queue-depth)")
	fs.IntVar(&o.n, "n", 1, "cuts to make")
	link := fs.String("link", "", "NETNS/IF[,NETNS/IF...]: the switch ports set down to cut the first path and up to restore it")
	fs.StringVar(&o.kill, "kill", "", "pid file: the cut also kills that process (SIGKILL), after the links are down")
	fs.StringVar(&o.restart, "restart", "", "shell command (sh -c) the restore runs once the links are up, e.g. to start the killed process again")
	fs.StringVar(&o.cutSh, "cut-sh", "", "shell command (sh -c) the cut runs after -link and -kill")
	fs.BoolVar(&o.gone, "until-gone", false, "the cut's window ends when the path's controller is removed (not when it leaves live), and the restore waits for a new live controller")
	notify := fs.String("notify", "", "comma-separated logs of the host agent and the switches: each cut reports when the host was told (the earliest line of a notification)")
	rejoin := fs.String("rejoin", "", "FILE:TEXT: after the restore, also wait (up to -back) for a new line of FILE holding TEXT")
	fs.DurationVar(&o.settle, "settle", 2*time.Second, "nothing-broken window before each cut")
	fs.DurationVar(&o.after, "after", time.Second, "I/O going on this long after the path left live ends a cut's window")
	fs.DurationVar(&o.hold, "hold", 60*time.Second, "longest wait for that")
	fs.DurationVar(&o.back, "back", 60*time.Second, "longest wait for the path to be live after the restore")
	fs.DurationVar(&o.ready, "ready", 120*time.Second, "longest wait for the paths and the device at the start")
	fs.BoolVar(&o.write, "write", false, "write sequence-numbered blocks and verify them after every cut")
	fs.IntVar(&o.bs, "bs", 4096, "I/O size in bytes (a multiple of 4096)")
	fs.Int64Var(&o.span, "span", 1<<20, "I/O below this many bytes (writes verify all of it after each cut)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *paths != "" {
		o.paths = strings.Split(*paths, ",")
	}
	for _, l := range strings.Split(*link, ",") {
		if l == "" && *link == "" {
			break
		}
		var nl nsLink
		if nl.ns, nl.name, _ = strings.Cut(l, "/"); nl.ns == "" || nl.name == "" {
			fmt.Fprintf(os.Stderr, "cuts: -link %q: want NETNS/IF\n", l)
			return 2
		}
		o.links = append(o.links, nl)
	}
	if *notify != "" {
		o.notify = strings.Split(*notify, ",")
	}
	if *rejoin != "" {
		if o.rejoin.file, o.rejoin.text, _ = strings.Cut(*rejoin, ":"); o.rejoin.file == "" || o.rejoin.text == "" {
			fmt.Fprintln(os.Stderr, "cuts: -rejoin: want FILE:TEXT")
			return 2
		}
	}
	if len(o.paths) < 1 || (len(o.links) == 0 && o.kill == "" && o.cutSh == "") || o.n < 1 || o.bs <= 0 || o.bs%4096 != 0 || o.span < int64(o.bs) {
		fmt.Fprintln(os.Stderr, "cuts: need -paths, a cut (-link NETNS/IF, -kill or -cut-sh), -n >= 1, -bs a multiple of 4096, -span >= bs")
		return 2
	}
	if err := runCuts(o, os.Stdout); err != nil {
		fmt.Printf("cuts: %v\n", err)
		return 1
	}
	fmt.Println(ctlproto.CutsDone)
	return 0
}

func runCuts(o cutsOptions, out io.Writer) error {
	deadline := time.Now().Add(o.ready)
	var dev string
	for {
		ok := true
		for _, p := range o.paths {
			if c := controllerTo(p); c.state != "live" {
				ok = false
			}
		}
		if ok {
			if dev = namespaceDevice(); dev != "" {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("paths %v not all live with a block device after %s: %s", o.paths, o.ready, describePaths(o.paths))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if o.iopolicy != "" {
		ps, _ := filepath.Glob("/sys/class/nvme-subsystem/*/iopolicy")
		for _, p := range ps {
			if err := os.WriteFile(p, []byte(o.iopolicy), 0); err != nil {
				return fmt.Errorf("iopolicy: %w", err)
			}
		}
	}
	w, err := startWorkload(dev, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "cuts: %s on %s, %d cuts of the path to %s\n", w.kind(), dev, o.n, o.paths[0])
	for i := range o.n {
		r := oneCut(w, o)
		r.Cut = i
		b, _ := json.Marshal(r)
		fmt.Fprintf(out, "%s%s\n", ctlproto.CutLinePrefix, b)
	}
	return nil
}

// oneCut makes one cut and measures it.
func oneCut(w *workload, o cutsOptions) ctlproto.CutReport {
	var r ctlproto.CutReport
	time.Sleep(o.settle)
	floor := w.m.window()
	r.FloorMS = floor.MaxGapMS
	// The cut path's controller is found by its address now, while it is
	// live, and then watched by its state alone: reading a controller's
	// address while its error recovery releases the socket can oops Linux
	// 6.1.192 (a NULL dereference in nvme_tcp_get_address, seen at the
	// 12th cut with a 10 ms poll).
	c := controllerTo(o.paths[0])
	if c.state != "live" {
		r.Problem = fmt.Sprintf("before the cut: path %s is %q, not live", o.paths[0], c.state)
		return r
	}
	notifyFrom := make([]int64, len(o.notify))
	for i, f := range o.notify {
		notifyFrom[i] = fileSize(f)
	}
	cut := time.Now()
	r.AtNS = cut.UnixNano()
	if err := o.cut(); err != nil {
		r.Problem = err.Error()
		return r
	}
	var left, removed time.Time
	for {
		now := time.Now()
		st := c.readState()
		if left.IsZero() && st != "live" {
			left = now
			r.NotLiveMS = ms(now.Sub(cut))
		}
		if removed.IsZero() && st == "" {
			removed = now
			r.GoneMS = ms(now.Sub(cut))
		}
		end := left
		if o.gone {
			end = removed
		}
		if !end.IsZero() && now.Sub(end) >= o.after && now.Sub(w.m.lastDone()) < 50*time.Millisecond {
			break
		}
		if now.Sub(cut) > o.hold {
			r.Problem = fmt.Sprintf("after %s: path left live: %t, removed: %t; last I/O %s ago", o.hold, !left.IsZero(),
				!removed.IsZero(), now.Sub(w.m.lastDone()).Round(time.Millisecond))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := w.m.window()
	r.StallMS, r.Ops, r.Errors = st.MaxGapMS, st.Reads, st.Errors
	r.StallEndMS = ms(time.Duration(st.MaxGapEndNS - cut.UnixNano()))
	if len(o.notify) > 0 {
		if at, err := notifiedAt(o.notify, notifyFrom); err != nil {
			r.Problem = strings.TrimSpace(r.Problem + "; " + err.Error())
		} else {
			r.NotifiedMS = ms(at.Sub(cut))
			r.FromNotifyMS = ms(stallFrom(st, at, w.m.record))
		}
	}
	rejoinFrom := fileSize(o.rejoin.file)
	up := time.Now()
	if err := o.restore(); err != nil {
		r.Problem = strings.TrimSpace(r.Problem + "; " + err.Error())
		return r
	}
	for {
		if o.gone {
			// A new controller: found by its address (the removed one's
			// error recovery is over).
			c = controllerTo(o.paths[0])
		}
		st := c.readState()
		if st == "live" {
			r.BackMS = ms(time.Since(up))
			break
		}
		if time.Since(up) > o.back {
			r.Problem = strings.TrimSpace(r.Problem + fmt.Sprintf("; %s still %q %s after the restore", c.name, st, o.back))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if o.rejoin.file != "" {
		for {
			if o.rejoin.since(rejoinFrom) {
				r.RejoinMS = ms(time.Since(up))
				break
			}
			if time.Since(up) > o.back {
				r.Problem = strings.TrimSpace(r.Problem + fmt.Sprintf("; no %q in %s %s after the restore", o.rejoin.text, o.rejoin.file, o.back))
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if o.write {
		r.Verified, r.Mismatches = w.verify()
	}
	// The next floor window starts here: the path's return and the
	// verification's pause are not "nothing broken".
	r.ReturnMS = w.m.window().MaxGapMS
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// cut sets every -link down, kills the -kill process and runs -cut-sh: a
// switch that loses power stops forwarding and answering at once, so
// nothing it sends as it dies (a BGP connection's FIN) leaves it.
func (o cutsOptions) cut() error {
	for _, l := range o.links {
		if err := l.set(false); err != nil {
			return err
		}
	}
	if o.kill != "" {
		if err := killPIDFile(o.kill); err != nil {
			return err
		}
	}
	if o.cutSh != "" {
		if out, err := exec.Command("/bin/sh", "-c", o.cutSh).CombinedOutput(); err != nil {
			return fmt.Errorf("cut %q: %w: %s", o.cutSh, err, bytes.TrimSpace(out))
		}
	}
	return nil
}

// killPIDFile kills the process whose pid the file holds with SIGKILL and
// waits until it is gone, so that a restart does not race its sockets.
func killPIDFile(file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("kill: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return fmt.Errorf("kill: %s holds %q, not a pid", file, b)
	}
	if err := unix.Kill(pid, unix.SIGKILL); err != nil {
		return fmt.Errorf("kill %d: %w", pid, err)
	}
	for range 500 {
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, unix.WNOHANG, nil) // reaped if it is ours
		if gone(pid) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("kill %d: still there 5 s after SIGKILL", pid)
}

// gone reports whether process pid has ended (no longer there, or a
// zombie nobody reaped yet).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) STATE ...: comm may hold blanks, the state follows its ')'.
	i := bytes.LastIndex(b, []byte(") "))
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

// restore sets every -link up and runs the -restart script.
func (o cutsOptions) restore() error {
	for _, l := range o.links {
		if err := l.set(true); err != nil {
			return err
		}
	}
	if o.restart == "" {
		return nil
	}
	if out, err := exec.Command("/bin/sh", "-c", o.restart).CombinedOutput(); err != nil {
		return fmt.Errorf("restart %s: %w: %s", o.restart, err, bytes.TrimSpace(out))
	}
	return nil
}

// fileSize is the size of file now (0 when it is not there or not asked
// for): where the lines written after now begin.
func fileSize(file string) int64 {
	if file == "" {
		return 0
	}
	st, err := os.Stat(file)
	if err != nil {
		return 0
	}
	return st.Size()
}

// logMark is a line of a log file to wait for.
type logMark struct{ file, text string }

// since reports whether the file has a line holding the text after offset
// from.
func (m logMark) since(from int64) bool {
	b, err := readFrom(m.file, from)
	return err == nil && bytes.Contains(b, []byte(m.text))
}

func readFrom(file string, from int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// The daemons' log lines that place a notification: the host agent's path
// failed over and target inactive (logged as the notification is
// handled: the one line of a reason that fails nothing over, 4), a
// switch's inactive notify event, and a reflector's BFD session down (the
// detection a reason 7 starts from).
const (
	failedOverLine = `msg="path failed over"`
	inactiveLine   = `msg="target inactive`
	notifyLine     = `msg=notify `
	notifyInactive = `state=inactive`
	bfdDownLine    = `msg="BFD session down"`
)

// notifiedAt finds the first notification in the agents' text logs after
// the offsets from and returns the earliest time any of them places it
// at, so the stall counted from it is an upper bound:
//
//   - a host agent's "path failed over" line: the line's time, less the
//     job's duration up to the log (done), plus the time to its first
//     action (acted), less the time from the notification's arrival to
//     that action (notified_to_acted); late by whatever ran between the
//     evaluation of done and the line's time stamp (on one guest CPU the
//     kernel's requeue and the reader can run there first);
//   - a host agent's "target inactive" line's time, a little after the
//     arrival;
//   - a switch's notify event with state=inactive, its time of sending
//     (logged after the frame went out);
//   - a reflector's BFD session down, the detection behind a reason 7.
//
// The logs' times have millisecond resolution.
func notifiedAt(files []string, from []int64) (time.Time, error) {
	var best time.Time
	for i, file := range files {
		b, err := readFrom(file, from[i])
		if err != nil {
			return time.Time{}, fmt.Errorf("notify: %w", err)
		}
		var seenFailover, seenOther bool
		for _, l := range strings.Split(string(b), "\n") {
			failover := strings.Contains(l, failedOverLine)
			other := strings.Contains(l, inactiveLine) || strings.Contains(l, bfdDownLine) ||
				(strings.Contains(l, notifyLine) && strings.Contains(l, notifyInactive))
			if (!failover || seenFailover) && (!other || seenOther) {
				continue
			}
			kv := logFields(l)
			t, err := time.Parse(time.RFC3339Nano, kv["time"])
			if err != nil {
				return time.Time{}, fmt.Errorf("notify: %q: time: %w", l, err)
			}
			if failover {
				seenFailover = true
				var d [3]time.Duration
				for i, k := range []string{"done", "acted", "notified_to_acted"} {
					if d[i], err = time.ParseDuration(kv[k]); err != nil {
						return time.Time{}, fmt.Errorf("notify: %q: %s: %w", l, k, err)
					}
				}
				t = t.Add(-d[0] + d[1] - d[2])
			} else {
				seenOther = true
			}
			if best.IsZero() || t.Before(best) {
				best = t
			}
		}
	}
	if best.IsZero() {
		return best, fmt.Errorf("notify: no notification in %s since the cut", strings.Join(files, ", "))
	}
	return best, nil
}

// logFields splits a log/slog text line into its key=value pairs (quoted
// values unquoted).
func logFields(l string) map[string]string {
	kv := map[string]string{}
	for l = strings.TrimSpace(l); l != ""; l = strings.TrimSpace(l) {
		k, rest, ok := strings.Cut(l, "=")
		if !ok {
			break
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				break
			}
			v, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		} else {
			v, rest, _ = strings.Cut(rest, " ")
		}
		kv[k], l = v, rest
	}
	return kv
}

// stallFrom is the longest gap between completed I/Os of the window st
// counted from at on (a gap that began before at counts from at). Gaps
// shorter than the meter's record length are not listed: when none
// reaches past at, the record length is returned, a bound from above.
func stallFrom(st ctlproto.StallReport, at time.Time, record time.Duration) time.Duration {
	best := time.Duration(0)
	from := at.UnixNano()
	for _, g := range st.Gaps {
		if g.EndNS <= from {
			continue
		}
		if d := time.Duration(g.EndNS - max(g.StartNS, from)); d > best {
			best = d
		}
	}
	return max(best, record)
}

// nsLink is a network interface in a named network namespace
// (/run/netns/NS, ip netns add).
type nsLink struct{ ns, name string }

// set sets the interface up or down with one ioctl on a socket made in its
// namespace: no program is started, so the cut happens at the time taken.
func (l nsLink) set(up bool) error {
	fd, err := socketIn(l.ns)
	if err != nil {
		return fmt.Errorf("link %s/%s: %w", l.ns, l.name, err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(l.name)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("link %s/%s: get flags: %w", l.ns, l.name, err)
	}
	flags := ifr.Uint16()
	if up {
		flags |= unix.IFF_UP
	} else {
		flags &^= unix.IFF_UP
	}
	ifr.SetUint16(flags)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("link %s/%s: set flags: %w", l.ns, l.name, err)
	}
	return nil
}

// socketIn opens a datagram socket in the named network namespace: a
// socket stays in the namespace it was made in, and an interface ioctl on
// it acts there. The namespace is entered by a thread of its own, which
// ends with its goroutine if it cannot go back.
func socketIn(ns string) (int, error) {
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		fd, err, back := socketInLocked(ns)
		if back {
			runtime.UnlockOSThread()
		}
		ch <- result{fd, err}
	}()
	r := <-ch
	return r.fd, r.err
}

// socketInLocked does socketIn's work on a locked thread; back reports
// whether the thread is in its own namespace again.
func socketInLocked(ns string) (fd int, err error, back bool) {
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return -1, err, true
	}
	defer self.Close()
	target, err := os.Open("/run/netns/" + ns)
	if err != nil {
		return -1, err, true
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return -1, err, true
	}
	fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if serr := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); serr != nil {
		if err == nil {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("back to the own namespace: %w", serr), false
	}
	return fd, err, true
}

// ctrl is one NVMe controller's sysfs state.
type ctrl struct{ name, state string }

// readState reads the controller's state again ("" when it is gone).
func (c ctrl) readState() string {
	b, _ := os.ReadFile(filepath.Join("/sys/class/nvme", c.name, "state"))
	return strings.TrimSpace(string(b))
}

// controllerTo returns the controller whose traddr is addr (state "" when
// there is none).
func controllerTo(addr string) ctrl {
	ds, _ := filepath.Glob("/sys/class/nvme/nvme*")
	for _, d := range ds {
		a, err := os.ReadFile(filepath.Join(d, "address"))
		if err != nil || !strings.Contains(","+strings.TrimSpace(string(a))+",", ",traddr="+addr+",") {
			continue
		}
		s, _ := os.ReadFile(filepath.Join(d, "state"))
		return ctrl{name: filepath.Base(d), state: strings.TrimSpace(string(s))}
	}
	return ctrl{}
}

func describePaths(addrs []string) string {
	var s []string
	for _, a := range addrs {
		c := controllerTo(a)
		s = append(s, fmt.Sprintf("%s: %s %q", a, c.name, c.state))
	}
	return strings.Join(s, ", ")
}

// headDevice matches a native multipath head (not the hidden nvmeXcYnZ).
var headDevice = regexp.MustCompile(`^nvme[0-9]+n[0-9]+$`)

// namespaceDevice is /dev/NAME of the one NVMe namespace block device, ""
// while there is none (or more than one).
func namespaceDevice() string {
	es, _ := os.ReadDir("/sys/block")
	var found []string
	for _, e := range es {
		if headDevice.MatchString(e.Name()) {
			found = append(found, e.Name())
		}
	}
	if len(found) != 1 {
		return ""
	}
	if _, err := os.Stat("/dev/" + found[0]); err != nil {
		return ""
	}
	return "/dev/" + found[0]
}

// recordGap is the shortest gap between I/Os the cut runner lists (for
// FromNotifyMS).
const recordGap = 2 * time.Millisecond

// seqMagic starts every block the write workload writes.
const seqMagic = "INOFSEQ1"

// workload is one I/O at a time on the device: random reads, or writes
// of sequence numbers to the blocks in turn.
type workload struct {
	f      *os.File
	m      *meter
	write  bool
	bs     int
	blocks int64

	// pause stops the writer between two writes until the channel it is
	// handed is closed.
	pause chan chan struct{}
	// acked[b] is the last acknowledged sequence number written to block
	// b (0: none); owned by the writer, read by verify while it is paused.
	acked []uint64
}

func (w *workload) kind() string {
	if w.write {
		return fmt.Sprintf("writing sequence numbers to %d blocks of %d bytes", w.blocks, w.bs)
	}
	return fmt.Sprintf("reading random blocks of %d bytes below %d", w.bs, w.blocks*int64(w.bs))
}

func startWorkload(dev string, o cutsOptions) (*workload, error) {
	flags := os.O_RDONLY
	if o.write {
		flags = os.O_RDWR
	}
	f, err := os.OpenFile(dev, flags|unix.O_DIRECT, 0)
	if err != nil {
		return nil, err
	}
	span := o.span
	if size, err := f.Seek(0, io.SeekEnd); err == nil && size < span {
		span = size
	}
	if span < int64(o.bs) {
		f.Close()
		return nil, fmt.Errorf("%s is smaller than one I/O", dev)
	}
	now := time.Now()
	w := &workload{f: f, write: o.write, bs: o.bs, blocks: span / int64(o.bs), pause: make(chan chan struct{}),
		m: &meter{start: now, last: now, report: time.Hour, record: recordGap}}
	w.acked = make([]uint64, w.blocks)
	buf, err := unix.Mmap(-1, 0, o.bs, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("buffer: %w", err)
	}
	go w.loop(buf)
	return w, nil
}

// loop does one I/O at a time forever.
func (w *workload) loop(buf []byte) {
	var seq uint64
	for {
		select {
		case resume := <-w.pause:
			<-resume
		default:
		}
		var err error
		if w.write {
			seq++
			b := int64(seq % uint64(w.blocks))
			copy(buf, seqMagic)
			binary.LittleEndian.PutUint64(buf[8:], seq)
			var n int
			if n, err = unix.Pwrite(int(w.f.Fd()), buf, b*int64(w.bs)); err == nil && n != w.bs {
				err = errors.New("short write")
			}
			if err == nil {
				w.acked[b] = seq
			}
		} else {
			var n int
			if n, err = unix.Pread(int(w.f.Fd()), buf, rand.Int64N(w.blocks)*int64(w.bs)); err == nil && n != w.bs {
				err = errors.New("short read")
			}
		}
		w.m.done(err)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// verify pauses the writer, reads every block back and counts those that
// hold anything but the last acknowledged write to them or a later write
// to the same block (a write that failed may still have landed); it
// returns the blocks checked and the mismatches, and lets the writer go on.
func (w *workload) verify() (checked, bad int) {
	// The writer takes resume between two writes and waits until it is
	// closed.
	resume := make(chan struct{})
	w.pause <- resume
	defer func() {
		// The pause is not a gap of the I/O: the next write's gap counts
		// from now.
		w.m.mu.Lock()
		w.m.last = time.Now()
		w.m.mu.Unlock()
		close(resume)
	}()
	buf, err := unix.Mmap(-1, 0, w.bs, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		fmt.Printf("cuts: verify buffer: %v\n", err)
		return 0, 1
	}
	defer unix.Munmap(buf)
	for b := range w.blocks {
		want := w.acked[b]
		if want == 0 {
			continue
		}
		checked++
		n, err := unix.Pread(int(w.f.Fd()), buf, b*int64(w.bs))
		got := binary.LittleEndian.Uint64(buf[8:])
		if err != nil || n != w.bs || string(buf[:8]) != seqMagic || got < want || got%uint64(w.blocks) != uint64(b) {
			bad++
			if bad <= 5 {
				fmt.Printf("cuts: block %d holds %q seq %d (read %d, %v), last acknowledged %d\n", b, buf[:8], got, n, err, want)
			}
		}
	}
	return checked, bad
}

// lastDone is when the last I/O completed.
func (m *meter) lastDone() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}
