package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
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
	link     nsLink // the switch port whose link the cut sets down
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
	link := fs.String("link", "", "NETNS/IF: the switch port set down to cut the first path and up to restore it")
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
	o.link.ns, o.link.name, _ = strings.Cut(*link, "/")
	if len(o.paths) < 1 || o.link.ns == "" || o.link.name == "" || o.n < 1 || o.bs <= 0 || o.bs%4096 != 0 || o.span < int64(o.bs) {
		fmt.Fprintln(os.Stderr, "cuts: need -paths, -link NETNS/IF, -n >= 1, -bs a multiple of 4096, -span >= bs")
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
	cut := time.Now()
	r.AtNS = cut.UnixNano()
	if err := o.link.set(false); err != nil {
		r.Problem = err.Error()
		return r
	}
	var left time.Time
	for {
		now := time.Now()
		if left.IsZero() && c.readState() != "live" {
			left = now
			r.NotLiveMS = ms(now.Sub(cut))
		}
		if !left.IsZero() && now.Sub(left) >= o.after && now.Sub(w.m.lastDone()) < 50*time.Millisecond {
			break
		}
		if now.Sub(cut) > o.hold {
			r.Problem = fmt.Sprintf("after %s: path left live: %t; last I/O %s ago", o.hold, !left.IsZero(),
				now.Sub(w.m.lastDone()).Round(time.Millisecond))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := w.m.window()
	r.StallMS, r.Ops, r.Errors = st.MaxGapMS, st.Reads, st.Errors
	up := time.Now()
	if err := o.link.set(true); err != nil {
		r.Problem = strings.TrimSpace(r.Problem + "; " + err.Error())
		return r
	}
	for {
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
	if o.write {
		r.Verified, r.Mismatches = w.verify()
	}
	// The next floor window starts here: the path's return and the
	// verification's pause are not "nothing broken".
	r.ReturnMS = w.m.window().MaxGapMS
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

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
		m: &meter{start: now, last: now, report: time.Hour, record: 20 * time.Millisecond}}
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
