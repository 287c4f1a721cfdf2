package discovery

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	hostA = "nqn.2014-08.org.nvmexpress:uuid:host-a"
	hostB = "nqn.2014-08.org.nvmexpress:uuid:host-b"
)

// table is a Source whose entries per host NQN the test sets.
type table struct {
	mu sync.Mutex
	m  map[string][]Entry
	ch chan struct{}
}

func newTable() *table { return &table{m: map[string][]Entry{}, ch: make(chan struct{}, 1)} }

func (t *table) Visible(nqn string, _ netip.Addr) []Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.m[nqn])
}

func (t *table) Changes() <-chan struct{} { return t.ch }

func (t *table) set(nqn string, es ...Entry) {
	t.mu.Lock()
	t.m[nqn] = es
	t.mu.Unlock()
	select {
	case t.ch <- struct{}{}:
	default:
	}
}

func entry(addr string, nqn string) Entry {
	return Entry{Transport: TransportTCP, Addr: netip.MustParseAddr(addr), NQN: nqn}
}

// serve starts a server on a loopback port and returns its address.
func serve(t *testing.T, src Source, o Options) (*Server, string, *prometheus.Registry) {
	t.Helper()
	return serveConfig(t, Config{Options: o, Source: src})
}

// serveConfig is serve with the whole configuration (a registry is added).
func serveConfig(t *testing.T, cfg Config) (*Server, string, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Registry = reg
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, ln.Addr().String(), reg
}

func dial(t *testing.T, addr string, o ClientOptions) *Client {
	t.Helper()
	c, err := Dial(context.Background(), addr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func wantStatus(t *testing.T, err error, want Status) *StatusError {
	t.Helper()
	var se *StatusError
	if !errors.As(err, &se) {
		t.Fatalf("err %v, want status %s", err, want)
	}
	if se.CQE.Status != want {
		t.Fatalf("status %s, want %s", se.CQE.Status, want)
	}
	return se
}

// TestOneShotDiscover runs the one-shot exchange of `nvme discover` and
// checks the identify data and the entries of the host's log.
func TestOneShotDiscover(t *testing.T) {
	src := newTable()
	src.set(hostA, entry("10.0.2.9", "nqn.2024-01.io.example:t2"), Entry{Transport: TransportRDMA, Addr: netip.MustParseAddr("fd00::5"), Port: 4421, NQN: "nqn.2024-01.io.example:t5"},
		entry("10.0.2.3", ""))
	src.set(hostB, entry("10.0.9.9", "nqn.2024-01.io.example:other"))
	_, addr, _ := serve(t, src, Options{})
	c := dial(t, addr, ClientOptions{HostNQN: hostA})
	id, err := c.Start([16]byte{1})
	if err != nil {
		t.Fatal(err)
	}
	if id[111] != 2 || binary.LittleEndian.Uint16(id[78:]) != c.CntlID || c.CntlID == 0 {
		t.Fatalf("identify: cntrltype %d cntlid %d, connect gave %d", id[111], binary.LittleEndian.Uint16(id[78:]), c.CntlID)
	}
	if got := cString(id[768:1024]); got != DiscoveryNQN {
		t.Fatalf("identify subnqn %q", got)
	}
	if binary.LittleEndian.Uint16(id[514:]) == 0 || binary.LittleEndian.Uint32(id[536:])&3 == 0 {
		t.Fatal("identify: MAXCMD and SGLS must be set for the Linux host")
	}
	gen, es, err := c.ReadLog()
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{entry("10.0.2.3", ""), {Transport: TransportTCP, Addr: netip.MustParseAddr("10.0.2.9"), Port: DefaultPort, NQN: "nqn.2024-01.io.example:t2"},
		{Transport: TransportRDMA, Addr: netip.MustParseAddr("fd00::5"), Port: 4421, NQN: "nqn.2024-01.io.example:t5"}}
	want[0].Port = DefaultPort
	if !slices.Equal(es, want) || gen == 0 {
		t.Fatalf("log gen %d entries %+v, want %+v", gen, es, want)
	}
	// The raw entries: first the controller's own (TP 8010: current
	// discovery subsystem, explicit persistent connections), where the
	// host reached it; a referral for the target without NQN, IPv6 family.
	page, err := c.GetLogPage(0, 5*1024, false)
	if err != nil {
		t.Fatal(err)
	}
	if e := page[1024:]; e[0] != 3 || e[2] != 3 || binary.LittleEndian.Uint16(e[10:]) != eflagsEPCSD ||
		cString(e[256:512]) != DiscoveryNQN || cString(e[512:768])+":"+cString(e[32:64]) != addr {
		t.Fatalf("own entry: trtype %d subtype %d eflags %#x subnqn %q at %s:%s, want %s", e[0], e[2],
			binary.LittleEndian.Uint16(e[10:]), cString(e[256:512]), cString(e[512:768]), cString(e[32:64]), addr)
	}
	if e := page[2048:]; e[2] != 1 || cString(e[256:512]) != DiscoveryNQN || e[1] != 1 || cString(e[32:64]) != "4420" {
		t.Fatalf("referral entry: subtype %d subnqn %q adrfam %d trsvcid %q", e[2], cString(e[256:512]), e[1], cString(e[32:64]))
	}
	if e := page[4096:]; e[0] != 1 || e[1] != 2 || e[2] != 2 || cString(e[512:768]) != "fd00::5" {
		t.Fatalf("rdma entry: trtype %d adrfam %d subtype %d traddr %q", e[0], e[1], e[2], cString(e[512:768]))
	}
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
}

// TestLogInPieces reads the log in pieces as a host with a small transfer
// size does, and checks the offset and length rules.
func TestLogInPieces(t *testing.T) {
	src := newTable()
	var es []Entry
	for i := range 5 {
		es = append(es, entry(netip.AddrFrom4([4]byte{10, 1, 0, byte(i + 1)}).String(), "nqn.2024-01.io.example:t"))
	}
	src.set(hostA, es...)
	_, addr, _ := serve(t, src, Options{})
	c := dial(t, addr, ClientOptions{HostNQN: hostA})
	if _, err := c.Start([16]byte{}); err != nil {
		t.Fatal(err)
	}
	whole, err := c.GetLogPage(0, 7*1024, false) // the header, the controller's own entry, 5 targets
	if err != nil {
		t.Fatal(err)
	}
	var pieces []byte
	for off := 0; off < len(whole); off += 1000 {
		n := min(1000, len(whole)-off)
		p, err := c.GetLogPage(uint64(off), n, true)
		if err != nil {
			t.Fatalf("piece at %d: %v", off, err)
		}
		pieces = append(pieces, p...)
	}
	if !bytes.Equal(pieces, whole) {
		t.Fatal("the pieces differ from the whole log")
	}
	beyond, err := c.GetLogPage(6*1024, 3*1024, false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(beyond[:1024], whole[6*1024:]) || !bytes.Equal(beyond[1024:], make([]byte, 2048)) {
		t.Fatal("a read past the end must return the rest, then zeros")
	}
	_, err = c.GetLogPage(2, 8, false)
	wantStatus(t, err, StatusInvalidField|StatusDNR)
	_, err = c.GetLogPage(8*1024, 8, false)
	wantStatus(t, err, StatusInvalidField|StatusDNR)
}

// TestAENOnChange keeps a persistent connection and checks that a change of
// the host's entries completes its AER with the discovery log change
// notice, that other hosts' changes do not count, and that the notice is
// masked until the host reads the log.
func TestAENOnChange(t *testing.T) {
	src := newTable()
	t1, t2 := entry("10.0.0.1", "nqn.2024-01.io.example:t1"), entry("10.0.0.2", "nqn.2024-01.io.example:t2")
	src.set(hostA, t1, t2)
	_, addr, reg := serve(t, src, Options{})
	c := dial(t, addr, ClientOptions{HostNQN: hostA, KATO: 30 * time.Second})
	if _, err := c.Start([16]byte{}); err != nil {
		t.Fatal(err)
	}
	if v, err := c.GetFeatures(fidAsyncConfig); err != nil || v != aecDiscoveryChange {
		t.Fatalf("async event configuration %#x, %v", v, err)
	}
	if v, err := c.GetFeatures(fidKeepAlive); err != nil || v != 30000 {
		t.Fatalf("keep alive timer %d, %v", v, err)
	}
	gen, _, err := c.ReadLog()
	if err != nil {
		t.Fatal(err)
	}
	src.set(hostB, t1) // another host's change
	src.set(hostA, t1) // t2's link went down
	v, err := c.WaitAEN(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if v != AENDiscoveryChange {
		t.Fatalf("AEN dw0 %#x, want %#x", v, AENDiscoveryChange)
	}
	gen2, es, err := c.ReadLog()
	if err != nil {
		t.Fatal(err)
	}
	if gen2 != gen+1 || !slices.Equal(es, []Entry{withPort(t1)}) {
		t.Fatalf("after the change: gen %d (before %d) entries %+v", gen2, gen, es)
	}
	// Next change: a new AER is needed, the log was read (unmasked).
	if err := c.AsyncEventRequest(); err != nil {
		t.Fatal(err)
	}
	src.set(hostA, t1, t2)
	if v, err := c.WaitAEN(10 * time.Second); err != nil || v != AENDiscoveryChange {
		t.Fatalf("second AEN %#x, %v", v, err)
	}
	if err := c.KeepAlive(); err != nil {
		t.Fatal(err)
	}
	if n := metricSum(t, reg, "inof_discovery_aens_total"); n != 2 {
		t.Fatalf("aens counted %v, want 2", n)
	}
}

// TestAENMasked checks that a second change does not complete a second AER
// before the host read the log (with RAE clear).
func TestAENMasked(t *testing.T) {
	src := newTable()
	t1, t2 := entry("10.0.0.1", "nqn.2024-01.io.example:t1"), entry("10.0.0.2", "nqn.2024-01.io.example:t2")
	src.set(hostA, t1)
	_, addr, _ := serve(t, src, Options{})
	c := dial(t, addr, ClientOptions{HostNQN: hostA, KATO: 30 * time.Second})
	if _, err := c.Start([16]byte{}); err != nil {
		t.Fatal(err)
	}
	if err := c.AsyncEventRequest(); err != nil {
		t.Fatal(err)
	}
	src.set(hostA, t1, t2)
	if _, err := c.WaitAEN(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	src.set(hostA, t2)
	// The header with RAE set does not unmask; the second AER stays
	// outstanding, so the next completion seen is the read's own.
	if _, err := c.GetLogPage(0, 1024, true); err != nil {
		t.Fatal(err)
	}
	if err := c.KeepAlive(); err != nil {
		t.Fatal(err)
	}
	if len(c.aens) != 0 {
		t.Fatalf("AEN while masked: %v", c.aens)
	}
	// Reading with RAE clear unmasks, but the log read is now current:
	// no notice until the next change.
	if _, _, err := c.ReadLog(); err != nil {
		t.Fatal(err)
	}
	src.set(hostA)
	if v, err := c.WaitAEN(10 * time.Second); err != nil || v != AENDiscoveryChange {
		t.Fatalf("AEN after unmask %#x, %v", v, err)
	}
}

func withPort(e Entry) Entry {
	e.Port = e.port()
	return e
}

// metricSum adds every sample of a metric family.
func metricSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// TestWrongNQN connects to a subsystem the discovery controller is not:
// Connect Invalid Parameters with the subnqn offset in the data, then the
// controller closes the connection.
func TestWrongNQN(t *testing.T) {
	_, addr, reg := serve(t, newTable(), Options{})
	c := dial(t, addr, ClientOptions{HostNQN: hostA, SubNQN: "nqn.2024-01.io.example:t1"})
	_, err := c.Connect([16]byte{})
	se := wantStatus(t, err, StatusConnectInvalidParam|StatusDNR)
	if se.CQE.Result != 1<<16|256 {
		t.Fatalf("dw0 %#x, want iattr 1 ipo 256", se.CQE.Result)
	}
	wantClosed(t, c.Conn())
	if n := metricSum(t, reg, "inof_discovery_connects_total"); n != 1 {
		t.Fatalf("connects counted %v", n)
	}
}

// wantClosed reads until the controller closes the connection.
func wantClosed(t *testing.T, nc net.Conn) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := io.Copy(io.Discard, nc); err != nil {
		t.Fatalf("want a clean close, got %v after %d bytes", err, n)
	}
}

// TestCommandErrors checks the status of commands the controller refuses.
func TestCommandErrors(t *testing.T) {
	src := newTable()
	_, addr, _ := serve(t, src, Options{})
	c := dial(t, addr, ClientOptions{HostNQN: hostA, KATO: 30 * time.Second})
	_, err := c.Identify()
	wantStatus(t, err, StatusCommandSequence|StatusDNR)
	_, err = c.PropertyGet(propCSTS)
	wantStatus(t, err, StatusCommandSequence|StatusDNR)
	if _, err := c.Connect([16]byte{}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Identify() // not enabled yet
	wantStatus(t, err, StatusCommandSequence|StatusDNR)
	_, err = c.Connect([16]byte{})
	wantStatus(t, err, StatusCommandSequence|StatusDNR)
	if err := c.PropertySet(propCC, 0x460061); err != nil {
		t.Fatal(err)
	}
	err = c.PropertySet(propCSTS, 1)
	wantStatus(t, err, StatusInvalidField|StatusDNR)
	var q SQE
	q[0] = 0x80 // format NVM: not an admin command of a discovery controller
	_, _, err = c.Command(q, nil)
	wantStatus(t, err, StatusInvalidOpcode|StatusDNR)
	q = fabrics(0x7e)
	_, _, err = c.Command(q, nil)
	wantStatus(t, err, StatusInvalidOpcode|StatusDNR)
	q = SQE{}
	q[0] = opIdentify // CNS 0: namespace
	q.SetSGL(SGL{Length: identifyLen, Type: sglTransportData})
	_, _, err = c.Command(q, nil)
	wantStatus(t, err, StatusInvalidField|StatusDNR)
	q = SQE{}
	q[0] = opIdentify
	q.SetDW(10, cnsController)
	q.SetSGL(SGL{Length: 512, Type: sglTransportData}) // too short
	_, _, err = c.Command(q, nil)
	wantStatus(t, err, StatusSGLLengthInvalid|StatusDNR)
	q = SQE{}
	q[0] = opGetLogPage
	q.SetDW(10, 0x02|255<<16) // SMART log
	q.SetSGL(SGL{Length: 1024, Type: sglTransportData})
	_, _, err = c.Command(q, nil)
	wantStatus(t, err, StatusInvalidField|StatusDNR)
	err = c.SetFeatures(fidAsyncConfig|1<<31, aecDiscoveryChange) // save
	wantStatus(t, err, StatusFeatureNotSaveable|StatusDNR)
	err = c.SetFeatures(0x07, 0) // number of queues
	wantStatus(t, err, StatusInvalidField|StatusDNR)
	for range aerLimit {
		if err := c.AsyncEventRequest(); err != nil {
			t.Fatal(err)
		}
	}
	// The fifth AER completes at once with the limit status; the client
	// files it as an AEN completion.
	if err := c.AsyncEventRequest(); err != nil {
		t.Fatal(err)
	}
	if err := c.KeepAlive(); err != nil {
		t.Fatal(err)
	}
	if len(c.aens) != 1 || c.aens[0] != 0 {
		t.Fatalf("AER beyond the limit: %v", c.aens)
	}
}

// TestBadPDUs sends malformed PDUs over a pipe and checks that the
// controller answers with a C2HTermReq naming the field and closes.
func TestBadPDUs(t *testing.T) {
	s, err := New(Config{Options: Options{}, Source: newTable()})
	if err != nil {
		t.Fatal(err)
	}
	var q SQE
	q.SetHeader(opKeepAlive, 1)
	capsule := Encode(&CapsuleCmd{SQE: q}, Framing{})
	badHlen := bytes.Clone(capsule)
	badHlen[2] = 64
	long := bytes.Clone(capsule)
	binary.LittleEndian.PutUint32(long[4:], 1<<20)
	ic := Encode(&ICReq{}, Framing{})
	cases := []struct {
		name     string
		icreq    []byte
		send     []byte
		fes      FES
		fei      uint32
		framing  Framing
		noICResp bool
	}{
		{name: "first PDU not ICReq", icreq: capsule, fes: FESSequence, noICResp: true},
		{name: "PDU format version", icreq: func() []byte { b := bytes.Clone(ic); b[8] = 1; return b }(), fes: FESUnsupportedPar, fei: 8, noICResp: true},
		{name: "hlen", icreq: ic, send: badHlen, fes: FESInvalidHeader, fei: 2},
		{name: "too long", icreq: ic, send: long, fes: FESDataLimit, fei: 4},
		{name: "unknown type", icreq: ic, send: func() []byte { b := bytes.Clone(capsule); b[0] = 0x0f; return b }(), fes: FESInvalidHeader},
		{name: "second ICReq", icreq: ic, send: ic, fes: FESSequence},
		{name: "H2CData without R2T", icreq: ic, send: Encode(&H2CData{CID: 1, Data: []byte{1, 2, 3, 4}}, Framing{}), fes: FESSequence},
		{name: "header digest", icreq: Encode(&ICReq{HDGST: true}, Framing{}),
			send: func() []byte {
				b := Encode(&CapsuleCmd{SQE: q}, Framing{HeaderDigest: true})
				b[cmdHeaderLen+1] ^= 1
				return b
			}(),
			fes: FESHeaderDigest, framing: Framing{HeaderDigest: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.ServeConn(ctx, a)
				s.wg.Wait()
			}()
			_ = b.SetDeadline(time.Now().Add(10 * time.Second))
			go func() { _, _ = b.Write(append(bytes.Clone(tc.icreq), tc.send...)) }()
			if !tc.noICResp {
				p, _, err := ReadPDU(b, Framing{}, 1024)
				if _, ok := p.(*ICResp); !ok {
					t.Fatalf("want ICResp, got %v %v", p, err)
				}
			}
			p, _, err := ReadPDU(b, tc.framing, 1024)
			tr, ok := p.(*TermReq)
			if !ok || tr.FromHost {
				t.Fatalf("want C2HTermReq, got %+v %v", p, err)
			}
			if tr.FES != tc.fes || tr.FEI != tc.fei {
				t.Fatalf("fes %d fei %d, want %d %d", tr.FES, tr.FEI, tc.fes, tc.fei)
			}
			if _, err := io.Copy(io.Discard, b); err != nil && !errors.Is(err, io.ErrClosedPipe) {
				t.Fatalf("after TermReq: %v", err)
			}
			b.Close()
			<-done
		})
	}
}

// TestDataDigest runs the exchange with both digests and checks that a
// command with a bad data digest fails alone.
func TestDataDigest(t *testing.T) {
	src := newTable()
	src.set(hostA, entry("10.0.0.1", "nqn.2024-01.io.example:t1"))
	_, addr, _ := serve(t, src, Options{})
	c := dial(t, addr, ClientOptions{HostNQN: hostA, HeaderDigest: true, DataDigest: true})
	if _, err := c.Start([16]byte{}); err != nil {
		t.Fatal(err)
	}
	if _, es, err := c.ReadLog(); err != nil || len(es) != 1 {
		t.Fatalf("log %+v, %v", es, err)
	}
	var q SQE
	q.SetHeader(opFabrics, 99)
	q[4] = fcConnect
	q.SetSGL(SGL{Length: 4, Type: sglDataOffset})
	b := Encode(&CapsuleCmd{SQE: q, Data: []byte{1, 2, 3, 4}}, c.f)
	b[len(b)-1] ^= 0xff
	if _, err := c.Conn().Write(b); err != nil {
		t.Fatal(err)
	}
	p, err := c.next(time.Now().Add(10*time.Second), false)
	if r, ok := p.(*CapsuleResp); !ok || r.CQE.CID != 99 || r.CQE.Status != StatusTransientTransport {
		t.Fatalf("want a transient transport error for command 99, got %+v %v", p, err)
	}
	if err := c.KeepAlive(); err != nil {
		t.Fatalf("the connection must survive a data digest error: %v", err)
	}
}

// TestLimits checks the per-host and total connection bounds.
func TestLimits(t *testing.T) {
	_, addr, reg := serve(t, newTable(), Options{MaxConns: 3, MaxConnsPerHost: 2})
	a1 := dial(t, addr, ClientOptions{HostNQN: hostA})
	dial(t, addr, ClientOptions{HostNQN: hostA})
	// The third from the same address is closed before its ICResp.
	if _, err := Dial(context.Background(), addr, ClientOptions{HostNQN: hostA}); err == nil {
		t.Fatal("third connection from one host accepted")
	}
	a1.Close()
	if err := pollDial(addr); err != nil {
		t.Fatalf("a slot freed by a closed connection was not reused: %v", err)
	}
	if n := metricSum(t, reg, "inof_discovery_connections_refused_total"); n < 1 {
		t.Fatalf("refusals counted %v", n)
	}
}

// pollDial retries until a connection gets its ICResp (the server frees a
// slot when it notices the close).
func pollDial(addr string) error {
	var err error
	for range 100 {
		var c *Client
		if c, err = Dial(context.Background(), addr, ClientOptions{HostNQN: hostA}); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// TestTimeouts checks that a connection without ICReq, and one that stops
// sending keep-alives, are closed.
func TestTimeouts(t *testing.T) {
	_, addr, reg := serve(t, newTable(), Options{HandshakeTimeout: 200 * time.Millisecond})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	wantClosed(t, nc)
	_, addr2, reg2 := serve(t, newTable(), Options{})
	c := dial(t, addr2, ClientOptions{HostNQN: hostA, KATO: 500 * time.Millisecond})
	if _, err := c.Start([16]byte{}); err != nil {
		t.Fatal(err)
	}
	wantClosed(t, c.Conn())
	for _, r := range []*prometheus.Registry{reg, reg2} {
		if n := metricSum(t, r, "inof_discovery_errors_total"); n != 1 {
			t.Fatalf("timeouts counted %v, want 1", n)
		}
	}
}

// TestAENEmptyLogHeader checks a host that reads only the header of a log
// holding no target (libnvme does when NUMREC is 0; here it never is: the
// controller's own entry is always there), with RAE set: the header alone
// is not the whole page and keeps the notice masked; reading the whole
// page, as libnvme then does, unmasks the next notice.
func TestAENEmptyLogHeader(t *testing.T) {
	src := newTable()
	t1 := entry("10.0.0.1", "nqn.2024-01.io.example:t1")
	src.set(hostA, t1)
	_, addr, _ := serve(t, src, Options{})
	c := dial(t, addr, ClientOptions{HostNQN: hostA, KATO: 30 * time.Second})
	if _, err := c.Start([16]byte{}); err != nil {
		t.Fatal(err)
	}
	src.set(hostA)
	if v, err := c.WaitAEN(10 * time.Second); err != nil || v != AENDiscoveryChange {
		t.Fatalf("AEN %#x, %v", v, err)
	}
	hdr, err := c.GetLogPage(0, 1024, true)
	if err != nil {
		t.Fatal(err)
	}
	if n := binary.LittleEndian.Uint64(hdr[8:]); n != 1 { // the controller's own entry only
		t.Fatalf("numrec %d", n)
	}
	if _, es, err := c.ReadLog(); err != nil || len(es) != 0 {
		t.Fatalf("emptied log: %+v, %v", es, err)
	}
	if err := c.AsyncEventRequest(); err != nil {
		t.Fatal(err)
	}
	src.set(hostA, t1)
	if v, err := c.WaitAEN(10 * time.Second); err != nil || v != AENDiscoveryChange {
		t.Fatalf("AEN after an empty log was read: %#x, %v", v, err)
	}
}

// FuzzServeConn feeds arbitrary bytes after a valid ICReq (and, when
// connected is set, a Connect and CC.EN) to a controller connection: it
// must answer or close, never panic or hang.
func FuzzServeConn(f *testing.F) {
	var q SQE
	q.SetHeader(opFabrics, 1)
	q[4] = fcConnect
	binary.LittleEndian.PutUint16(q[connectSQSizeOff:], 31)
	q.SetSGL(SGL{Length: connectDataLen, Type: sglDataOffset})
	d := ConnectData{CntlID: dynamicController, SubNQN: DiscoveryNQN, HostNQN: hostA}
	connect := Encode(&CapsuleCmd{SQE: q, Data: d.Marshal()}, Framing{})
	enable := fabrics(fcPropertySet)
	enable.SetHeader(opFabrics, 2)
	enable.SetDW(11, propCC)
	enable.SetDW(12, 1)
	var logPage SQE
	logPage.SetHeader(opGetLogPage, 3)
	logPage.SetDW(10, lidDiscovery|255<<16)
	logPage.SetSGL(SGL{Length: 1024, Type: sglTransportData})
	ready := slices.Concat(connect, Encode(&CapsuleCmd{SQE: enable}, Framing{}))
	f.Add(false, connect)
	f.Add(true, Encode(&CapsuleCmd{SQE: logPage}, Framing{}))
	f.Add(false, []byte{4, 0, 72, 0, 0xff, 0xff, 0xff, 0xff})
	src := newTable()
	src.set(hostA, entry("10.0.0.1", "nqn.2024-01.io.example:t1"))
	s, err := New(Config{Options: Options{HandshakeTimeout: 5 * time.Second}, Source: src,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, connected bool, b []byte) {
		if connected {
			b = slices.Concat(ready, b)
		}
		a, h := net.Pipe()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.ServeConn(ctx, a)
		_ = h.SetDeadline(time.Now().Add(10 * time.Second))
		read := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, h)
			read <- err
		}()
		_, _ = h.Write(append(Encode(&ICReq{}, Framing{}), b...))
		h.Close()
		<-read
		s.wg.Wait()
		if ctx.Err() != nil {
			t.Fatal("the connection outlived its input by 10 s")
		}
	})
}
