package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// childEnv marks the second run of clockshift, the one that installs the
// filter and becomes the program.
const childEnv = "CLOCKSHIFT_CHILD"

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: clockshift OFFSET_FILE PROGRAM [ARG...]")
		os.Exit(2)
	}
	if os.Getenv(childEnv) == "1" {
		os.Exit(child(os.Args[2], os.Args[2:]))
	}
	os.Exit(trace(os.Args[1], os.Args[2:]))
}

// child installs the seccomp filter and execs the program; it returns only
// on failure.
func child(prog string, argv []string) int {
	path, err := exec.LookPath(prog)
	if err == nil {
		err = installFilter()
	}
	if err == nil {
		env := make([]string, 0, len(os.Environ()))
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, childEnv+"=") {
				env = append(env, e)
			}
		}
		err = syscall.Exec(path, argv, env)
	}
	fmt.Fprintf(os.Stderr, "clockshift: %s: %v\n", prog, err)
	return 127
}

// installFilter traces clock_gettime on the realtime clocks and lets every
// other system call through; it applies to every thread.
func installFilter() error {
	const (
		archX8664      = 0xc000003e // AUDIT_ARCH_X86_64
		offNR          = 0
		offArch        = 4
		offArg0        = 16
		clockRealtime  = 0
		clockRTCoarse  = 5
		clockRTAlarm   = 8
		seccompRetTrac = 0x7ff00000 // SECCOMP_RET_TRACE
		seccompRetAllo = 0x7fff0000 // SECCOMP_RET_ALLOW
	)
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	prog := []unix.SockFilter{
		ld(offArch),
		jeq(archX8664, 0, 6), // other ABIs: allow
		ld(offNR),
		jeq(unix.SYS_CLOCK_GETTIME, 0, 4),
		ld(offArg0),
		jeq(clockRealtime, 3, 0),
		jeq(clockRTCoarse, 2, 0),
		jeq(clockRTAlarm, 1, 0),
		ret(seccompRetAllo),
		ret(seccompRetTrac),
	}
	// A jump counts from the instruction after it: allow is at index 8,
	// trace at 9.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, 1 /* SECCOMP_SET_MODE_FILTER */, 1, /* TSYNC */
		uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	return nil
}

// offset is the current clock offset in nanoseconds.
var offset atomic.Int64

// watchOffset reads the offset file now and whenever it changes.
func watchOffset(path string) error {
	var last time.Time
	read := func() error {
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		if st.ModTime().Equal(last) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sec, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return fmt.Errorf("offset file %s: %w", path, err)
		}
		last = st.ModTime()
		offset.Store(sec * int64(time.Second))
		return nil
	}
	if err := read(); err != nil {
		return err
	}
	go func() {
		for range time.Tick(50 * time.Millisecond) {
			if err := read(); err != nil {
				fmt.Fprintf(os.Stderr, "clockshift: %v\n", err)
			}
		}
	}()
	return nil
}

// trace runs the program under ptrace and answers its realtime clock
// reads; it returns the program's exit status.
func trace(offsetFile string, argv []string) int {
	if err := watchOffset(offsetFile); err != nil {
		fmt.Fprintf(os.Stderr, "clockshift: %v\n", err)
		return 2
	}
	runtime.LockOSThread() // every ptrace request from the thread that traces
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "clockshift: %v\n", err)
		return 2
	}
	cmd := exec.Command(self, append([]string{offsetFile}, argv...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "clockshift: start %s: %v\n", argv[0], err)
		return 127
	}
	pid := cmd.Process.Pid
	go func() {
		for s := range sigs {
			syscall.Kill(pid, s.(syscall.Signal))
		}
	}()
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, unix.WALL, nil); err != nil || !ws.Stopped() {
		fmt.Fprintf(os.Stderr, "clockshift: the child did not stop at its exec (%v, %v)\n", err, ws)
		return 127
	}
	opts := unix.PTRACE_O_TRACESECCOMP | unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEFORK |
		unix.PTRACE_O_TRACEVFORK | unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_EXITKILL
	if err := unix.PtraceSetOptions(pid, opts); err != nil {
		fmt.Fprintf(os.Stderr, "clockshift: ptrace options: %v\n", err)
		return 127
	}
	unix.PtraceCont(pid, 0)
	known := map[int]bool{pid: true}
	for {
		tid, err := unix.Wait4(-1, &ws, unix.WALL, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "clockshift: wait: %v\n", err)
			return 127
		}
		switch {
		case ws.Exited():
			if tid == pid {
				return ws.ExitStatus()
			}
			delete(known, tid)
			continue
		case ws.Signaled():
			if tid == pid {
				signal.Reset()
				syscall.Kill(os.Getpid(), ws.Signal())
				return 128 + int(ws.Signal())
			}
			delete(known, tid)
			continue
		case !ws.Stopped():
			continue
		}
		sig := ws.StopSignal()
		deliver := 0
		switch {
		case sig == unix.SIGTRAP && ws.TrapCause() == unix.PTRACE_EVENT_SECCOMP:
			answerClock(tid)
		case sig == unix.SIGTRAP && ws.TrapCause() == unix.PTRACE_EVENT_EXEC:
			hideVDSO(tid)
		case sig == unix.SIGTRAP && ws.TrapCause() > 0:
			// clone, fork, vfork: the new task is traced by itself
		case sig == unix.SIGSTOP && !known[tid]:
			known[tid] = true // a new thread's first stop
		default:
			deliver = int(sig)
		}
		unix.PtraceCont(tid, deliver)
	}
}

// answerClock answers the clock_gettime a thread is stopped in with the
// shifted time and skips the system call.
func answerClock(tid int) {
	var regs unix.PtraceRegs
	if unix.PtraceGetRegs(tid, &regs) != nil {
		return
	}
	now := time.Now().UnixNano() + offset.Load()
	var ts [16]byte
	*(*int64)(unsafe.Pointer(&ts[0])) = now / int64(time.Second)
	*(*int64)(unsafe.Pointer(&ts[8])) = now % int64(time.Second)
	if _, err := unix.PtracePokeData(tid, uintptr(regs.Rsi), ts[:]); err != nil {
		return // a bad pointer: let the kernel fail the call as it would
	}
	regs.Orig_rax = ^uint64(0) // skip it
	regs.Rax = 0
	unix.PtraceSetRegs(tid, &regs)
}

// Auxiliary vector tags (elf.h).
const (
	atNull        = 0
	atIgnore      = 1
	atSysinfoEHDR = 33
)

// hideVDSO turns the AT_SYSINFO_EHDR entry of the new program's auxiliary
// vector into AT_IGNORE, so that it reads clocks through system calls.
func hideVDSO(tid int) {
	var regs unix.PtraceRegs
	if unix.PtraceGetRegs(tid, &regs) != nil {
		return
	}
	word := func(addr uint64) (uint64, bool) {
		var b [8]byte
		if _, err := unix.PtracePeekData(tid, uintptr(addr), b[:]); err != nil {
			return 0, false
		}
		return *(*uint64)(unsafe.Pointer(&b[0])), true
	}
	sp := regs.Rsp
	argc, ok := word(sp)
	if !ok {
		return
	}
	p := sp + 8*(argc+2)         // past argc, argv and its NULL
	for i := 0; i < 1<<16; i++ { // envp
		v, ok := word(p)
		p += 8
		if !ok || v == 0 {
			break
		}
	}
	for i := 0; i < 256; i++ { // auxv pairs
		tag, ok := word(p)
		if !ok || tag == atNull {
			return
		}
		if tag == atSysinfoEHDR {
			var b [8]byte
			*(*uint64)(unsafe.Pointer(&b[0])) = atIgnore
			unix.PtracePokeData(tid, uintptr(p), b[:])
			return
		}
		p += 16
	}
}
