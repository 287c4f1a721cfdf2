package discovery

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"
)

// ClientOptions configure a Client.
type ClientOptions struct {
	HostNQN string
	// SubNQN is the subsystem Connect asks for; empty means DiscoveryNQN.
	SubNQN string
	// KATO is the keep-alive timeout Connect asks for (0: none, as a
	// one-shot `nvme discover`; a persistent connection asks 30 s).
	KATO         time.Duration
	HeaderDigest bool
	DataDigest   bool
	// Timeout bounds each exchange (default 10 s).
	Timeout time.Duration
}

// Client is a minimal NVMe/TCP discovery host: the exchange the Linux host
// performs (docs/discovery.md), one command at a time, for tests and
// diagnostics. Completions of Asynchronous Event Requests that arrive
// while it waits for another command are kept for WaitAEN. It is not safe
// for concurrent use.
type Client struct {
	nc      net.Conn
	br      *bufio.Reader
	opts    ClientOptions
	f       Framing
	cid     uint16
	aers    map[uint16]bool
	aens    []uint32
	CntlID  uint16 // from Connect
	MaxData uint32 // the controller's MAXH2CDATA
}

// Dial connects to a discovery controller at addr (host:port) and
// exchanges ICReq/ICResp.
func Dial(ctx context.Context, addr string, opts ClientOptions) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	c, err := NewClient(nc, opts)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// NewClient exchanges ICReq/ICResp on nc.
func NewClient(nc net.Conn, opts ClientOptions) (*Client, error) {
	if opts.SubNQN == "" {
		opts.SubNQN = DiscoveryNQN
	}
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	c := &Client{nc: nc, br: bufio.NewReader(nc), opts: opts, aers: map[uint16]bool{}}
	if err := c.write(&ICReq{HDGST: opts.HeaderDigest, DDGST: opts.DataDigest}, Framing{}); err != nil {
		return nil, err
	}
	_ = nc.SetReadDeadline(time.Now().Add(opts.Timeout))
	p, _, err := ReadPDU(c.br, Framing{}, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("discovery client: reading ICResp: %w", err)
	}
	r, ok := p.(*ICResp)
	if !ok {
		return nil, fmt.Errorf("discovery client: got %s, want ICResp", p.PDUType())
	}
	if r.HDGST != opts.HeaderDigest || r.DDGST != opts.DataDigest || r.CPDA != 0 {
		return nil, fmt.Errorf("discovery client: controller digests %t/%t cpda %d, asked %t/%t", r.HDGST, r.DDGST, r.CPDA,
			opts.HeaderDigest, opts.DataDigest)
	}
	c.f = Framing{HeaderDigest: r.HDGST, DataDigest: r.DDGST}
	c.MaxData = r.MaxH2CData
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.nc.Close() }

// Conn is the underlying connection (tests send raw bytes on it).
func (c *Client) Conn() net.Conn { return c.nc }

func (c *Client) write(p PDU, f Framing) error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.opts.Timeout))
	if _, err := c.nc.Write(Encode(p, f)); err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	return nil
}

// StatusError is a command that completed with an error status.
type StatusError struct {
	CQE CQE
}

// Error implements error.
func (e *StatusError) Error() string {
	return fmt.Sprintf("command %d: %s (dw0 %#x)", e.CQE.CID, e.CQE.Status, uint32(e.CQE.Result))
}

// Command sends one command with optional in-capsule data and waits for
// its completion, collecting the C2H data it returns. A completion with an
// error status is returned with a *StatusError.
func (c *Client) Command(q SQE, data []byte) (CQE, []byte, error) {
	c.cid++
	cid := c.cid
	q.SetHeader(q.Opcode(), cid)
	if len(data) > 0 {
		q.SetSGL(SGL{Length: uint32(len(data)), Type: sglDataOffset})
	}
	if err := c.write(&CapsuleCmd{SQE: q, Data: data}, c.f); err != nil {
		return CQE{}, nil, err
	}
	if q.Opcode() == opAsyncEvent {
		c.aers[cid] = true
		return CQE{CID: cid}, nil, nil
	}
	var got []byte
	deadline := time.Now().Add(c.opts.Timeout)
	for {
		p, err := c.next(deadline, false)
		if err != nil {
			return CQE{}, nil, err
		}
		switch p := p.(type) {
		case *C2HData:
			if p.CID != cid || uint64(p.Offset) != uint64(len(got)) {
				return CQE{}, nil, fmt.Errorf("discovery client: C2HData cid %d offset %d, want cid %d offset %d", p.CID, p.Offset, cid, len(got))
			}
			got = append(got, p.Data...)
		case *CapsuleResp:
			if p.CQE.CID != cid {
				return CQE{}, nil, fmt.Errorf("discovery client: completion of command %d while waiting for %d", p.CQE.CID, cid)
			}
			if p.CQE.Status != StatusSuccess {
				return p.CQE, got, &StatusError{CQE: p.CQE}
			}
			return p.CQE, got, nil
		}
	}
}

// next reads the next PDU that is not an AER completion (those are kept;
// with aen set, next returns nil after keeping one).
func (c *Client) next(deadline time.Time, aen bool) (PDU, error) {
	for {
		_ = c.nc.SetReadDeadline(deadline)
		p, _, err := ReadPDU(c.br, c.f, 64<<20)
		if err != nil {
			return nil, fmt.Errorf("discovery client: %w", err)
		}
		switch p := p.(type) {
		case *TermReq:
			return nil, fmt.Errorf("discovery client: controller terminated the connection: fes %d fei %d", p.FES, p.FEI)
		case *CapsuleResp:
			if c.aers[p.CQE.CID] {
				delete(c.aers, p.CQE.CID)
				c.aens = append(c.aens, uint32(p.CQE.Result))
				if aen {
					return nil, nil
				}
				continue
			}
		}
		return p, nil
	}
}

// WaitAEN waits up to timeout for an Asynchronous Event Request to complete
// and returns its dword 0.
func (c *Client) WaitAEN(timeout time.Duration) (uint32, error) {
	if len(c.aens) == 0 {
		p, err := c.next(time.Now().Add(timeout), true)
		if err != nil {
			return 0, err
		}
		if p != nil {
			return 0, fmt.Errorf("discovery client: unexpected %s while waiting for an AEN", p.PDUType())
		}
	}
	v := c.aens[0]
	c.aens = c.aens[1:]
	return v, nil
}

// TakeAENs returns the AER completions received and not yet taken (they
// arrive in order with the other completions), and forgets them.
func (c *Client) TakeAENs() []uint32 {
	out := c.aens
	c.aens = nil
	return out
}

func fabrics(fctype uint8) SQE {
	var q SQE
	q[0], q[4] = opFabrics, fctype
	return q
}

// Connect sends the fabrics Connect for the admin queue and returns the
// completion (the controller ID in dword 0).
func (c *Client) Connect(hostID [16]byte) (CQE, error) {
	q := fabrics(fcConnect)
	binary.LittleEndian.PutUint16(q[connectSQSizeOff:], discoveryAdminSize-1)
	binary.LittleEndian.PutUint32(q[connectKATOOff:], uint32(c.opts.KATO/time.Millisecond))
	d := ConnectData{HostID: hostID, CntlID: dynamicController, SubNQN: c.opts.SubNQN, HostNQN: c.opts.HostNQN}
	cqe, _, err := c.Command(q, d.Marshal())
	if err == nil {
		c.CntlID = uint16(cqe.Result)
	}
	return cqe, err
}

// PropertyGet reads a controller property (8 bytes for CAP, else 4).
func (c *Client) PropertyGet(off uint32) (uint64, error) {
	q := fabrics(fcPropertyGet)
	if off == propCAP {
		q[40] = 1
	}
	q.SetDW(11, off)
	cqe, _, err := c.Command(q, nil)
	return cqe.Result, err
}

// PropertySet writes a 4-byte controller property.
func (c *Client) PropertySet(off, v uint32) error {
	q := fabrics(fcPropertySet)
	q.SetDW(11, off)
	q.SetDW(12, v)
	_, _, err := c.Command(q, nil)
	return err
}

// Identify returns the Identify Controller data (CNS 1).
func (c *Client) Identify() ([]byte, error) {
	var q SQE
	q[0] = opIdentify
	q.SetDW(10, cnsController)
	q.SetSGL(SGL{Length: identifyLen, Type: sglTransportData})
	_, data, err := c.Command(q, nil)
	return data, err
}

// GetLogPage reads length bytes (a multiple of 4) of the discovery log page
// from offset off; rae keeps an asynchronous event masked.
func (c *Client) GetLogPage(off uint64, length int, rae bool) ([]byte, error) {
	if length < 4 || length%4 != 0 {
		return nil, errors.New("discovery client: log length must be a positive multiple of 4")
	}
	var q SQE
	q[0] = opGetLogPage
	numd := uint32(length/4 - 1)
	dw10 := lidDiscovery | numd<<16
	if rae {
		dw10 |= 1 << 15
	}
	q.SetDW(10, dw10)
	q.SetDW(11, numd>>16)
	q.SetDW(12, uint32(off))
	q.SetDW(13, uint32(off>>32))
	q.SetSGL(SGL{Length: uint32(length), Type: sglTransportData})
	_, data, err := c.Command(q, nil)
	return data, err
}

// SetFeatures sets a feature (0x0B async event configuration, 0x0F keep
// alive timer).
func (c *Client) SetFeatures(fid, value uint32) error {
	var q SQE
	q[0] = opSetFeatures
	q.SetDW(10, fid)
	q.SetDW(11, value)
	_, _, err := c.Command(q, nil)
	return err
}

// GetFeatures reads a feature's current value.
func (c *Client) GetFeatures(fid uint32) (uint32, error) {
	var q SQE
	q[0] = opGetFeatures
	q.SetDW(10, fid)
	cqe, _, err := c.Command(q, nil)
	return uint32(cqe.Result), err
}

// KeepAlive sends a Keep Alive command.
func (c *Client) KeepAlive() error {
	var q SQE
	q[0] = opKeepAlive
	_, _, err := c.Command(q, nil)
	return err
}

// AsyncEventRequest submits an Asynchronous Event Request; its completion
// is collected by WaitAEN.
func (c *Client) AsyncEventRequest() error {
	var q SQE
	q[0] = opAsyncEvent
	_, _, err := c.Command(q, nil)
	return err
}

// Start performs what the Linux host does after ICReq: Connect, read CAP,
// enable the controller (CC 0x460060 then 0x460061), wait for CSTS.RDY,
// read VS, Identify; and for a persistent connection (KATO set) enable the
// discovery log change notice and submit an Asynchronous Event Request.
// It returns the Identify data.
func (c *Client) Start(hostID [16]byte) ([]byte, error) {
	if _, err := c.Connect(hostID); err != nil {
		return nil, err
	}
	if _, err := c.PropertyGet(propCAP); err != nil {
		return nil, err
	}
	for _, cc := range []uint32{0x460060, 0x460061} {
		if err := c.PropertySet(propCC, cc); err != nil {
			return nil, err
		}
	}
	csts, err := c.PropertyGet(propCSTS)
	if err != nil {
		return nil, err
	}
	if csts&1 == 0 {
		return nil, fmt.Errorf("discovery client: CSTS %#x not ready", csts)
	}
	if _, err := c.PropertyGet(propVS); err != nil {
		return nil, err
	}
	id, err := c.Identify()
	if err != nil {
		return nil, err
	}
	if c.opts.KATO > 0 && binary.LittleEndian.Uint32(id[92:])&aecDiscoveryChange != 0 {
		if err := c.SetFeatures(fidAsyncConfig, aecDiscoveryChange); err != nil {
			return nil, err
		}
		if err := c.AsyncEventRequest(); err != nil {
			return nil, err
		}
	}
	return id, nil
}

// ReadLog reads the discovery log as the Linux host does: the header (RAE
// set), the whole page (RAE clear), then the header again, retrying while
// the generation counter moved between the reads. It returns the entries
// of subsystems and referrals; the controller's entry of itself is left
// out, as libnvme's connect-all leaves it.
func (c *Client) ReadLog() (gen uint64, entries []Entry, err error) {
	for range 10 {
		hdr, err := c.GetLogPage(0, logHeaderLen, true)
		if err != nil {
			return 0, nil, err
		}
		n := binary.LittleEndian.Uint64(hdr[8:16])
		if n > maxTransfer/logEntryLen {
			return 0, nil, fmt.Errorf("discovery client: %d records", n)
		}
		page, err := c.GetLogPage(0, logHeaderLen+int(n)*logEntryLen, false)
		if err != nil {
			return 0, nil, err
		}
		again, err := c.GetLogPage(0, logHeaderLen, true)
		if err != nil {
			return 0, nil, err
		}
		g, es, ok := ParseLog(page)
		if !ok {
			return 0, nil, errors.New("discovery client: malformed discovery log")
		}
		if g == binary.LittleEndian.Uint64(again[0:8]) && g == binary.LittleEndian.Uint64(hdr[0:8]) {
			return g, slices.DeleteFunc(es, func(e Entry) bool { return e.Current }), nil
		}
	}
	return 0, nil, errors.New("discovery client: discovery log kept changing")
}

// Shutdown asks the controller to shut down (CC.SHN) as the Linux host
// does before it disconnects, and waits for CSTS.SHST complete.
func (c *Client) Shutdown() error {
	if err := c.PropertySet(propCC, 0x464061); err != nil {
		return err
	}
	csts, err := c.PropertyGet(propCSTS)
	if err != nil {
		return err
	}
	if (csts>>2)&3 != 2 {
		return fmt.Errorf("discovery client: CSTS %#x: shutdown not complete", csts)
	}
	return nil
}

// DIM sends a Discovery Information Management command (TP 8010) with the
// host's registration, as libnvme's nvmf_dim does; task is TaskRegister,
// TaskUpdate or TaskDeregister.
func (c *Client) DIM(task uint32, r Registration, traddr string) error {
	var q SQE
	q.SetHeader(opDIM, 0)
	q.SetDW(10, task)
	_, _, err := c.Command(q, MarshalDIM(r, traddr))
	return err
}
