package discovery

import (
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// registrar records what the controller reports.
type registrar struct {
	mu     sync.Mutex
	events []string
	regs   []Registration
	cond   *sync.Cond
}

func newRegistrar() *registrar {
	r := &registrar{}
	r.cond = sync.NewCond(&r.mu)
	return r
}

func (r *registrar) Register(reg Registration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, "register "+reg.HostNQN+" "+reg.Addr.String())
	r.regs = append(r.regs, reg)
	r.cond.Broadcast()
}

func (r *registrar) Deregister(reg Registration, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, "deregister "+reg.HostNQN+" "+why)
	r.cond.Broadcast()
}

// wait waits until n events were reported and returns them.
func (r *registrar) wait(t *testing.T, n int) []string {
	t.Helper()
	stop := time.AfterFunc(10*time.Second, func() { r.mu.Lock(); r.cond.Broadcast(); r.mu.Unlock() })
	defer stop.Stop()
	deadline := time.Now().Add(10 * time.Second)
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.events) < n {
		if time.Now().After(deadline) {
			t.Fatalf("events %q, want %d", r.events, n)
		}
		r.cond.Wait()
	}
	return append([]string(nil), r.events...)
}

// TestDIMRegistration: with a Registrar the controller says it is a CDC
// (Identify DCTYPE 2) and takes a host's DIM registration, bound to its
// connection (its Connect NQN, its source address); an update replaces
// it, a deregistration ends it, and so does the connection's end: a
// disconnect, or the loss of keep-alive. What is not the host's own, and a
// registration over a connection without keep-alive, is refused and
// reported to nobody.
func TestDIMRegistration(t *testing.T) {
	rg := newRegistrar()
	src := newTable()
	_, addr, reg := serveConfig(t, Config{Source: src, Registrar: rg})
	me := Registration{HostNQN: hostA, HostID: [16]byte{7, 7}, Name: "h1", Version: "Linux 6.1", Symbolic: "rack 4"}
	// Only an explicit persistent connection (KATO set) may register.
	once := dial(t, addr, ClientOptions{HostNQN: hostA})
	if _, err := once.Start([16]byte{7}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, once.DIM(TaskRegister, me, ""), StatusCommandSequence|StatusDNR)
	once.Close()
	c := dial(t, addr, ClientOptions{HostNQN: hostA, KATO: time.Hour})
	id, err := c.Start([16]byte{7})
	if err != nil {
		t.Fatal(err)
	}
	if id[1806] != dctypeCDC {
		t.Fatalf("DCTYPE %d, want 2 (CDC)", id[1806])
	}
	if err := c.DIM(TaskRegister, me, ""); err != nil {
		t.Fatal(err)
	}
	rg.wait(t, 1)
	rg.mu.Lock()
	got := rg.regs[0]
	rg.mu.Unlock()
	want := me
	want.Addr = netip.MustParseAddr("127.0.0.1")
	if got != want {
		t.Fatalf("registration %+v, want %+v", got, want)
	}
	// Not its own: another NQN, another address, another entity type.
	other := me
	other.HostNQN = "nqn.2014-08.org.nvmexpress:uuid:someone-else"
	wantStatus(t, c.DIM(TaskRegister, other, ""), StatusInvalidField|StatusDNR)
	wantStatus(t, c.DIM(TaskRegister, me, "10.9.9.9"), StatusInvalidField|StatusDNR)
	var q SQE
	q.SetHeader(opDIM, 0)
	bad := MarshalDIM(me, "")
	bad[18] = 2 // entity type DDC
	_, _, err = c.Command(q, bad)
	wantStatus(t, err, StatusInvalidField|StatusDNR)
	bad = MarshalDIM(me, "")[:dimHeaderLen+100] // TDL says more
	_, _, err = c.Command(q, bad)
	wantStatus(t, err, StatusInvalidField|StatusDNR)
	if err := c.DIM(TaskUpdate, me, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	if err := c.DIM(TaskDeregister, me, ""); err != nil {
		t.Fatal(err)
	}
	if err := c.DIM(TaskRegister, me, ""); err != nil {
		t.Fatal(err)
	}
	c.Close()
	evs := rg.wait(t, 5)
	wantEvs := []string{"register " + hostA + " 127.0.0.1", "register " + hostA + " 127.0.0.1",
		"deregister " + hostA + " deregistered", "register " + hostA + " 127.0.0.1", "deregister " + hostA + " disconnected"}
	if strings.Join(evs, "\n") != strings.Join(wantEvs, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(evs, "\n"), strings.Join(wantEvs, "\n"))
	}
	// Keep-alive lost: the registration goes with the connection.
	k := dial(t, addr, ClientOptions{HostNQN: hostA, KATO: 200 * time.Millisecond})
	if _, err := k.Start([16]byte{}); err != nil {
		t.Fatal(err)
	}
	if err := k.DIM(TaskRegister, me, ""); err != nil {
		t.Fatal(err)
	}
	if evs := rg.wait(t, 7); evs[6] != "deregister "+hostA+" keep-alive lost" {
		t.Fatalf("after keep-alive loss: %q", evs[5:])
	}
	// 4 registrations (the update is one), 1 deregistration, 5 refused.
	if n := metricSum(t, reg, "inof_discovery_registrations_total"); n != 10 {
		t.Fatalf("DIM outcomes counted %v, want 10", n)
	}
}

// TestDIMWithoutRegistrar: a controller without a registrar is a plain
// discovery controller: DCTYPE 0 and DIM refused as an unknown command.
func TestDIMWithoutRegistrar(t *testing.T) {
	_, addr, _ := serve(t, newTable(), Options{})
	c := dial(t, addr, ClientOptions{HostNQN: hostA})
	id, err := c.Start([16]byte{})
	if err != nil {
		t.Fatal(err)
	}
	if id[1806] != 0 {
		t.Fatalf("DCTYPE %d", id[1806])
	}
	wantStatus(t, c.DIM(TaskRegister, Registration{HostNQN: hostA}, ""), StatusInvalidOpcode|StatusDNR)
}

// FuzzParseDIM: no DIM data makes the parser panic, and what it accepts
// names a host.
func FuzzParseDIM(f *testing.F) {
	f.Add(MarshalDIM(Registration{HostNQN: hostA, Symbolic: "x"}, ""))
	f.Add(MarshalDIM(Registration{HostNQN: hostA}, "10.0.0.1"))
	for _, r := range hostileDIMs {
		f.Add(MarshalDIM(r, ""))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, traddr, err := parseDIM(b)
		if err != nil {
			return
		}
		if r.HostNQN == "" {
			t.Fatal("accepted without a host NQN")
		}
		if !nqnOK(r.HostNQN) {
			t.Fatalf("accepted host NQN %q", r.HostNQN)
		}
		for _, s := range []string{r.Name, r.Version, r.Symbolic, traddr} {
			if _, ok := textField([]byte(s)); !ok {
				t.Fatalf("accepted text %q", s)
			}
		}
	})
}

// hostileDIMs are registrations whose NQN or text fields could carry
// connect options or terminal escapes.
var hostileDIMs = []Registration{
	{HostNQN: "nqn.2014-08.org.example:h,nr_io_queues=1"},
	{HostNQN: "nqn.2014-08.org.example:h=1"},
	{HostNQN: "nqn.2014-08.org.example:h\xc3"},
	{HostNQN: hostA, Name: "evil\x1b[2J\x1b]0;owned\x07"},
	{HostNQN: hostA, Version: "Linux\n6.1"},
	{HostNQN: hostA, Symbolic: "caf\xc3\xa9"},
}

// TestParseDIMRefusesHostileText: a DIM whose host NQN holds option
// separators or whose name, version or symbolic name holds anything but
// printable ASCII is refused whole, not cleaned up.
func TestParseDIMRefusesHostileText(t *testing.T) {
	for _, r := range hostileDIMs {
		if got, _, err := parseDIM(MarshalDIM(r, "")); !errors.Is(err, errDIM) {
			t.Errorf("%+v: parsed %+v, %v; want refused", r, got, err)
		}
	}
	if _, _, err := parseDIM(MarshalDIM(Registration{HostNQN: hostA, Name: "host 1", Version: "Linux 6.1", Symbolic: "rack 4"}, "")); err != nil {
		t.Errorf("a plain registration: %v", err)
	}
}
