// Package ctlproto is the control protocol between the test process and a
// guest's init (integration/vm/guestinit) over the guest's virtio-serial
// port "ctl": one JSON object per line in each direction.
//
// The host sends Requests, each with a fresh ID; the guest answers each with
// Replies carrying the same ID. A request is finished by its one reply with
// Done set; a started process (OpStart) first gets a reply with Started set,
// then replies with Output chunks, then the Done reply with its exit code.
package ctlproto

// PortName is the virtio-serial port name of the control channel.
const PortName = "ctl"

// Operations.
const (
	OpPing   = "ping"   // answered at once: the guest's init serves
	OpRun    = "run"    // run Argv to completion; Stdout, Stderr and Code
	OpStart  = "start"  // start Argv in the background; its output streams back
	OpSignal = "signal" // send Signal to the process started by request Target
	OpWrite  = "write"  // write Data to Path (mode Mode), creating parent dirs
	OpHTTP   = "http"   // GET URL inside the guest; Status and Stdout (body)
	// OpRead reads the files matching the glob patterns in Argv in the
	// guest's init itself (no process started, so polling sysfs costs the
	// guest little); Files.
	OpRead = "read"
)

// MaxReadFile bounds what OpRead returns of one file.
const MaxReadFile = 64 << 10

// Request is one command for the guest.
type Request struct {
	ID   uint64   `json:"id"`
	Op   string   `json:"op"`
	Argv []string `json:"argv,omitempty"`
	// Stdin is the standard input of OpRun (empty: /dev/null).
	Stdin []byte `json:"stdin,omitempty"`
	// TimeoutMS bounds OpRun and OpHTTP inside the guest (0: 60 s).
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
	Path      string `json:"path,omitempty"`
	Data      []byte `json:"data,omitempty"`
	Mode      uint32 `json:"mode,omitempty"`
	Target    uint64 `json:"target,omitempty"`
	Signal    int    `json:"signal,omitempty"`
	URL       string `json:"url,omitempty"`
}

// Reply is the guest's answer (or part of it) to the request with ID.
type Reply struct {
	ID      uint64 `json:"id"`
	Done    bool   `json:"done,omitempty"`
	Started bool   `json:"started,omitempty"`
	// Code is the exit code; -1 when the process was killed by a signal.
	Code   int    `json:"code"`
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
	// Output is a chunk of a started process's combined output.
	Output []byte `json:"output,omitempty"`
	Status int    `json:"status,omitempty"`
	// Error says why the request could not be carried out at all.
	Error string `json:"error,omitempty"`
	// Uptime is the guest's /proc/uptime in seconds when the reply was sent.
	Uptime float64 `json:"uptime,omitempty"`
	// TimeNS is the guest's wall clock (Unix nanoseconds) when the reply
	// was sent: with the round trip it places guest log times on the
	// test's clock.
	TimeNS int64 `json:"time_ns,omitempty"`
	// Files holds what OpRead read, by path (unreadable files are left
	// out).
	Files map[string]string `json:"files,omitempty"`
}

// StallReport is what iostall (the guest's I/O stall meter) prints, as one
// line of JSON, on SIGUSR1 and as its last line on SIGTERM or SIGINT.
type StallReport struct {
	Reads  uint64 `json:"reads"`
	Errors uint64 `json:"errors"`
	// MaxGapMS is the longest time between two completed reads (or from
	// the last completed read to the report, if that is longer).
	MaxGapMS float64 `json:"max_gap_ms"`
	// MaxGapEnd is the guest uptime (s) when the longest gap ended.
	MaxGapEnd float64 `json:"max_gap_end"`
	// MaxGapEndNS is the guest's wall clock (Unix ns) then.
	MaxGapEndNS int64 `json:"max_gap_end_ns,omitempty"`
	// Seconds is how long the loop ran.
	Seconds float64 `json:"seconds"`
	// Gaps are the window's gaps of at least the meter's -record length
	// (the longest MaxGaps of them, in no order; the one in progress
	// included): what the test needs to tell the gap an outage caused
	// from the others.
	Gaps []Gap `json:"gaps,omitempty"`
}

// MaxGaps bounds StallReport.Gaps.
const MaxGaps = 256

// Gap is one gap between completed reads: from the completion before it
// to the one that ended it (or to the report, for the gap in progress), on
// the guest's wall clock (Unix ns).
type Gap struct {
	StartNS int64 `json:"start_ns"`
	EndNS   int64 `json:"end_ns"`
}

// CutLinePrefix starts each line of the guest's cut runner (cuts) that
// holds a CutReport; CutsDone is its last line when every cut was made.
const (
	CutLinePrefix = "CUT "
	CutsDone      = "CUTS-DONE"
)

// CutReport is one link cut as the guest's cut runner measured it, every
// duration in the guest's own time (instruction-counted in deterministic
// mode).
type CutReport struct {
	Cut int `json:"cut"`
	// AtNS is the guest's wall clock (Unix ns) when the cut command
	// started: it places the cut in the guest's logs.
	AtNS int64 `json:"at_ns"`
	// FloorMS is the longest gap between completed I/Os in the settle
	// window before the cut, nothing broken: the guest's own floor.
	FloorMS float64 `json:"floor_ms"`
	// StallMS is the longest gap from the cut until the I/O had gone on
	// for the runner's -after time after the path left live.
	StallMS float64 `json:"stall_ms"`
	// Ops and Errors count the I/Os completed and failed in that window.
	Ops    uint64 `json:"ops"`
	Errors uint64 `json:"errors"`
	// NotLiveMS is the time from the cut until the cut path's controller
	// was seen leave live (0: it never did within -hold).
	NotLiveMS float64 `json:"not_live_ms"`
	// GoneMS is the time from the cut until the cut path's controller was
	// removed (0: not within the window).
	GoneMS float64 `json:"gone_ms,omitempty"`
	// BackMS is the time from the link's restore until the path's
	// controller was seen live again (0: not within -back).
	BackMS float64 `json:"back_ms"`
	// ReturnMS is the longest gap from the end of the stall window until
	// the path was live again (the writes' pause for the verification is
	// not counted).
	ReturnMS float64 `json:"return_ms"`
	// Verified is how many written blocks were read back and checked
	// after the cut (write workload); Mismatches those holding anything
	// but the last acknowledged write.
	Verified   int `json:"verified,omitempty"`
	Mismatches int `json:"mismatches,omitempty"`
	// StallEndMS is the time from the cut until the longest gap ended.
	StallEndMS float64 `json:"stall_end_ms,omitempty"`
	// NotifiedMS is the time from the cut until the host was told: the
	// earliest that the daemons' logs place it (a reflector's BFD down, a
	// switch's inactive notify, the host agent's receipt; to the logs'
	// millisecond; 0: the runner was not asked, -notify, or found none).
	NotifiedMS float64 `json:"notified_ms,omitempty"`
	// FromNotifyMS is the longest gap between completed I/Os counted from
	// then on (a gap that began before counts from then): the stall the
	// agents and the kernel own, the detection (BFD, TTL) excluded.
	FromNotifyMS float64 `json:"from_notify_ms,omitempty"`
	// RejoinMS is the time from the restore until the runner's -rejoin
	// log line appeared (the restarted switch is back in the fabric; 0:
	// not asked or not within -back).
	RejoinMS float64 `json:"rejoin_ms,omitempty"`
	// Problem says what went wrong (a wait that ran out, a command that
	// failed); empty when the cut went as planned.
	Problem string `json:"problem,omitempty"`
}
