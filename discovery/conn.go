package discovery

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"time"
)

// Transport limits of this controller.
const (
	maxH2CData   = 128 << 10 // ICResp MAXH2CDATA
	inCapsule    = 8 << 10   // admin in-capsule data the Linux host sends (Connect: 1 KiB)
	maxCmdPDU    = cmdHeaderLen + 2*digestLen + 128 + inCapsule
	maxTransfer  = 16 << 20 // largest Get Log Page transfer served
	c2hChunk     = 64 << 10 // data per C2HData PDU
	writeTimeout = 10 * time.Second
	drainTimeout = time.Second
)

// inbound is one read from the host.
type inbound struct {
	pdu PDU
	raw []byte
	err error
}

// conn is one host connection: an admin queue to the discovery controller.
// Its state belongs to the goroutine running run; a reader goroutine only
// decodes PDUs and hands them over.
type conn struct {
	s    *Server
	nc   net.Conn
	host netip.Addr
	log  *slog.Logger
	br   *bufio.Reader
	f    Framing

	connected bool
	cntlid    uint16
	hostNQN   string
	sqsize    uint16
	sqhead    uint16
	kato      time.Duration
	cc, csts  uint32
	aec       uint32
	aers      []uint16 // outstanding Asynchronous Event Requests (CIDs)
	masked    bool     // a change notice was sent; the host has not read the log (RAE=0) since
	logSet    []Entry  // the entries of the log as last read
	gen       uint64   // its generation counter
	timer     *time.Timer
	deadline  string // what the timer guards: "handshake" or "keep-alive"
	// registration is the host's explicit registration (DIM), which ends
	// with the connection; endWhy says how the connection ended.
	registration *Registration
	endWhy       string
}

func newConn(s *Server, nc net.Conn, host netip.Addr) *conn {
	return &conn{s: s, nc: nc, host: host, log: s.log.With("host", host.String()), br: bufio.NewReaderSize(nc, 16<<10)}
}

// errClose ends a connection after what had to be said was said.
var errClose = errors.New("close")

// run serves the connection until the host leaves, an error, or ctx ends.
func (c *conn) run(ctx context.Context) {
	c.s.met.active.Inc()
	defer c.s.met.active.Dec()
	defer func() {
		if c.cntlid != 0 {
			c.s.freeCntlid(c.cntlid)
		}
	}()
	c.timer = time.NewTimer(c.s.opts.HandshakeTimeout)
	c.deadline = "handshake"
	defer c.timer.Stop()
	stopWatch := context.AfterFunc(ctx, func() { c.nc.Close() })
	defer stopWatch()

	if err := c.handshake(); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.s.met.errors.WithLabelValues("timeout").Inc()
			c.s.rl.warn(c.log, "discovery connection timed out", "waiting_for", "ICReq")
			return
		}
		c.end(err)
		return
	}
	in := make(chan inbound)
	stop := make(chan struct{})
	done := make(chan struct{})
	go c.read(in, stop, done)
	graceful := c.loop(ctx, in)
	if c.registration != nil {
		why := c.endWhy
		if why == "" {
			why = "disconnected"
		}
		c.s.reg.Deregister(*c.registration, why)
		c.log.Info("registered host gone", "host_nqn", c.hostNQN, "why", why)
	}
	close(stop)
	if tc, ok := c.nc.(*net.TCPConn); ok && graceful {
		// Let the host read what was sent: FIN first, then drain what it
		// still sends for a moment (closing with unread data sends RST).
		_ = tc.CloseWrite()
		_ = c.nc.SetReadDeadline(time.Now().Add(drainTimeout))
	} else {
		c.nc.Close()
	}
	<-done
}

// read decodes PDUs until an error or stop; after stop it drains the
// connection (bounded by the read deadline run sets).
func (c *conn) read(in chan<- inbound, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		p, raw, err := ReadPDU(c.br, c.f, maxCmdPDU)
		select {
		case in <- inbound{p, raw, err}:
		case <-stop:
			_, _ = io.Copy(io.Discard, c.br)
			return
		}
		var dd *DataDigestError
		if err != nil && !errors.As(err, &dd) {
			<-stop
			_, _ = io.Copy(io.Discard, c.br)
			return
		}
	}
}

// handshake reads the ICReq and answers it.
func (c *conn) handshake() error {
	_ = c.nc.SetReadDeadline(time.Now().Add(c.s.opts.HandshakeTimeout))
	p, raw, err := ReadPDU(c.br, Framing{}, icLen)
	_ = c.nc.SetReadDeadline(time.Time{})
	if err != nil {
		return c.fatal(err, raw)
	}
	req, ok := p.(*ICReq)
	if !ok {
		return c.fatal(protoErr(FESSequence, 0, "first PDU is %s, not ICReq", p.PDUType()), raw)
	}
	if req.PFV != 0 {
		return c.fatal(protoErr(FESUnsupportedPar, 8, "PDU format version %d", req.PFV), raw)
	}
	if req.HPDA > 31 {
		return c.fatal(protoErr(FESUnsupportedPar, 10, "HPDA %d", req.HPDA), raw)
	}
	c.f = Framing{HeaderDigest: req.HDGST, DataDigest: req.DDGST, DataAlign: (int(req.HPDA) + 1) * 4}
	c.log.Debug("discovery connection opened", "header_digest", req.HDGST, "data_digest", req.DDGST, "hpda", req.HPDA)
	return c.send(&ICResp{HDGST: req.HDGST, DDGST: req.DDGST, MaxH2CData: maxH2CData}, Framing{})
}

// loop handles PDUs, change notices and the timer; it reports whether the
// connection should close gracefully.
func (c *conn) loop(ctx context.Context, in <-chan inbound) bool {
	// changed is replaced only once it fired, and before the entries are
	// looked at again: a change made at any time after it was taken
	// closes it (or one taken later), so none is missed.
	changed := c.s.changes()
	for {
		select {
		case <-ctx.Done():
			return false
		case m := <-in:
			if err := c.handle(m); err != nil {
				return c.end(err)
			}
		case <-changed:
			changed = c.s.changes()
			if err := c.checkAEN(); err != nil {
				return c.end(err)
			}
		case <-c.timer.C:
			c.s.met.errors.WithLabelValues("timeout").Inc()
			c.s.rl.warn(c.log, "discovery connection timed out", "waiting_for", c.deadline, "host_nqn", c.hostNQN)
			c.endWhy = c.deadline + " lost"
			return false
		}
	}
}

// end logs why the connection ends and reports whether to close gracefully.
func (c *conn) end(err error) bool {
	var pe *ProtocolError
	switch {
	case errors.Is(err, errClose):
		return true
	case errors.As(err, &pe):
		return true // the TermReq was sent by fatal
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		c.log.Debug("host closed the discovery connection", "host_nqn", c.hostNQN)
		return false
	default:
		c.log.Info("discovery connection ended", "host_nqn", c.hostNQN, "err", err)
		return false
	}
}

// fatal answers a transport error: a C2HTermReq quoting the offending
// header for a protocol error (the connection then closes), nothing for
// an I/O error. It returns err.
func (c *conn) fatal(err error, raw []byte) error {
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		return err
	}
	c.s.met.errors.WithLabelValues("malformed").Inc()
	c.s.rl.warn(c.log, "malformed PDU from host; terminating the connection", "host_nqn", c.hostNQN, "err", err)
	hdr := raw
	if len(hdr) > 128 {
		hdr = hdr[:128]
	}
	if len(raw) >= 3 && int(raw[2]) >= commonHeaderLen && int(raw[2]) < len(hdr) {
		hdr = hdr[:raw[2]]
	}
	_ = c.send(&TermReq{FES: pe.FES, FEI: pe.FEI, Header: hdr}, c.f)
	return err
}

func (c *conn) send(p PDU, f Framing) error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := c.nc.Write(Encode(p, f))
	return err
}

// handle processes one read.
func (c *conn) handle(m inbound) error {
	var dd *DataDigestError
	switch {
	case errors.As(m.err, &dd):
		c.s.met.errors.WithLabelValues("digest").Inc()
		c.s.rl.warn(c.log, "command capsule with a bad data digest", "cid", dd.CID)
		c.resetKeepAlive()
		return c.complete(dd.CID, 0, StatusTransientTransport)
	case m.err != nil:
		return c.fatal(m.err, m.raw)
	}
	c.resetKeepAlive()
	switch p := m.pdu.(type) {
	case *CapsuleCmd:
		return c.command(p)
	case *TermReq:
		c.s.rl.warn(c.log, "host terminated the connection", "fes", p.FES, "fei", p.FEI, "host_nqn", c.hostNQN)
		return errClose
	case *H2CData:
		return c.fatal(protoErr(FESSequence, 0, "H2CData without an R2T"), m.raw)
	case *ICReq:
		return c.fatal(protoErr(FESSequence, 0, "second ICReq"), m.raw)
	default:
		return c.fatal(protoErr(FESInvalidHeader, 0, "%s from a host", p.PDUType()), m.raw)
	}
}

// resetKeepAlive restarts the keep-alive timer after a command: the
// connection ends after twice KATO without one.
func (c *conn) resetKeepAlive() {
	if !c.connected || c.kato == 0 {
		return
	}
	c.timer.Reset(2 * c.kato)
}

// complete sends a command's completion.
func (c *conn) complete(cid uint16, result uint64, st Status) error {
	c.log.Debug("discovery command completed", "cid", cid, "status", st.String(), "dw0", result)
	if st == StatusSuccess {
		c.s.met.commands.WithLabelValues("success").Inc()
	} else {
		c.s.met.commands.WithLabelValues("error").Inc()
	}
	if c.connected {
		c.sqhead = (c.sqhead + 1) % (c.sqsize + 1)
	}
	return c.send(&CapsuleResp{CQE: CQE{Result: result, SQHead: c.sqhead, CID: cid, Status: st}}, c.f)
}

// command dispatches one command capsule.
func (c *conn) command(p *CapsuleCmd) error {
	q := &p.SQE
	cid := q.CID()
	c.log.Debug("discovery command", "cid", cid, "opcode", q.Opcode(), "fctype", q.FCType(),
		"cdw10", q.DW(10), "cdw11", q.DW(11), "cdw12", q.DW(12), "sgl_len", q.SGL().Length)
	if q.Opcode() == opFabrics {
		switch q.FCType() {
		case fcConnect:
			return c.connect(p)
		case fcPropertyGet:
			if !c.connected {
				return c.complete(cid, 0, StatusCommandSequence|StatusDNR)
			}
			v, st := c.propertyGet(q)
			return c.complete(cid, v, st)
		case fcPropertySet:
			if !c.connected {
				return c.complete(cid, 0, StatusCommandSequence|StatusDNR)
			}
			return c.complete(cid, 0, c.propertySet(q))
		default:
			return c.complete(cid, 0, StatusInvalidOpcode|StatusDNR)
		}
	}
	if !c.connected || c.csts&1 == 0 {
		return c.complete(cid, 0, StatusCommandSequence|StatusDNR)
	}
	switch q.Opcode() {
	case opIdentify:
		return c.identify(q)
	case opGetLogPage:
		return c.getLogPage(q)
	case opSetFeatures:
		return c.setFeatures(q)
	case opGetFeatures:
		v, st := c.getFeatures(q)
		return c.complete(cid, v, st)
	case opAsyncEvent:
		if len(c.aers) >= aerLimit {
			return c.complete(cid, 0, StatusAERLimit)
		}
		c.aers = append(c.aers, cid)
		return c.checkAEN()
	case opKeepAlive:
		return c.complete(cid, 0, StatusSuccess)
	case opDIM:
		return c.dim(p)
	}
	return c.complete(cid, 0, StatusInvalidOpcode|StatusDNR)
}

// connect handles a fabrics Connect to the admin queue.
func (c *conn) connect(p *CapsuleCmd) error {
	q := &p.SQE
	cid := q.CID()
	invalid := func(result uint64, why string) error {
		c.s.met.connects.WithLabelValues("invalid").Inc()
		c.s.rl.warn(c.log, "connect refused", "why", why)
		return c.complete(cid, result, StatusConnectInvalidParam|StatusDNR)
	}
	if c.connected {
		c.s.met.connects.WithLabelValues("invalid").Inc()
		return c.complete(cid, 0, StatusCommandSequence|StatusDNR)
	}
	if binary.LittleEndian.Uint16(q[connectRecfmtOff:]) != 0 {
		c.s.met.connects.WithLabelValues("invalid").Inc()
		return c.complete(cid, 0, StatusConnectFormat|StatusDNR)
	}
	if binary.LittleEndian.Uint16(q[connectQIDOff:]) != 0 {
		return invalid(connectQIDOff, "I/O queue on a discovery controller")
	}
	sqsize := binary.LittleEndian.Uint16(q[connectSQSizeOff:])
	if sqsize == 0 || sqsize > mqes {
		return invalid(connectSQSizeOff, "sqsize out of range")
	}
	data, st := inCapsuleData(p, connectDataLen)
	if st != StatusSuccess {
		c.s.met.connects.WithLabelValues("invalid").Inc()
		return c.complete(cid, 0, st)
	}
	d, bad := parseConnectData(data)
	if bad >= 0 {
		return invalid(iattrConnectData|uint64(bad), "malformed connect data")
	}
	if d.CntlID != dynamicController {
		return invalid(iattrConnectData|connectCntlidOff, "static controller ID asked")
	}
	if d.SubNQN != DiscoveryNQN {
		c.s.met.connects.WithLabelValues("wrong-nqn").Inc()
		c.s.rl.warn(c.log, "connect to a subsystem other than discovery refused", "subnqn", d.SubNQN, "host_nqn", d.HostNQN)
		if err := c.complete(cid, iattrConnectData|connectSubNQNOff, StatusConnectInvalidParam|StatusDNR); err != nil {
			return err
		}
		return errClose
	}
	id, ok := c.s.newCntlid()
	if !ok {
		return c.complete(cid, 0, Status(0x181)) // controller busy
	}
	c.connected, c.cntlid, c.hostNQN, c.sqsize = true, id, d.HostNQN, sqsize
	c.sqhead = 0
	c.kato = katoDuration(binary.LittleEndian.Uint32(q[connectKATOOff:]))
	c.timer.Stop()
	c.deadline = "keep-alive"
	c.resetKeepAlive()
	c.logSet, c.gen = c.visible(), 1
	c.s.met.connects.WithLabelValues("ok").Inc()
	c.log.Info("host connected to the discovery controller", "host_nqn", d.HostNQN, "cntlid", id,
		"kato", c.kato, "entries", len(c.logSet))
	return c.complete(cid, uint64(id), StatusSuccess)
}

// katoDuration rounds a KATO in ms up to the keep-alive granularity (KAS,
// 100 ms).
func katoDuration(ms uint32) time.Duration {
	return time.Duration((uint64(ms)+99)/100*100) * time.Millisecond
}

// inCapsuleData returns the n bytes of in-capsule data a command points at.
func inCapsuleData(p *CapsuleCmd, n int) ([]byte, Status) {
	g := p.SQE.SGL()
	switch {
	case g.Type != sglDataOffset:
		return nil, StatusSGLTypeInvalid | StatusDNR
	case g.Addr != 0 || g.Length < uint32(n) || uint64(len(p.Data)) < uint64(g.Length):
		return nil, StatusSGLLengthInvalid | StatusDNR
	}
	return p.Data[:n], StatusSuccess
}

func (c *conn) propertyGet(q *SQE) (uint64, Status) {
	size8 := q[40]&7 == 1
	if q[40]&7 > 1 {
		return 0, StatusInvalidField | StatusDNR
	}
	switch off := q.DW(11); {
	case off == propCAP && size8:
		return capValue, StatusSuccess
	case off == propVS && !size8:
		return versionVS, StatusSuccess
	case off == propCC && !size8:
		return uint64(c.cc), StatusSuccess
	case off == propCSTS && !size8:
		return uint64(c.csts), StatusSuccess
	}
	return 0, StatusInvalidField | StatusDNR
}

func (c *conn) propertySet(q *SQE) Status {
	if q[40]&7 != 0 || q.DW(11) != propCC {
		return StatusInvalidField | StatusDNR
	}
	cc := q.DW(12)
	en, wasEn := cc&1 != 0, c.cc&1 != 0
	c.cc = cc
	switch {
	case en && !wasEn:
		c.csts = 1 // RDY
	case !en && wasEn:
		c.csts = 0 // a reset: outstanding requests are gone
		c.aers = nil
	}
	if shn := (cc >> 14) & 3; shn != 0 {
		c.csts = c.csts&^(3<<2) | 2<<2 // SHST: shutdown complete
		c.log.Debug("host shut the discovery controller down", "host_nqn", c.hostNQN)
	}
	return StatusSuccess
}

func (c *conn) identify(q *SQE) error {
	cid := q.CID()
	cns, csi := q.DW(10)&0xff, q.DW(11)>>24
	var data []byte
	switch {
	case cns == cnsController:
		data = identifyController(c.s.id, c.cntlid, c.s.reg != nil)
	case cns == cnsCSCtrl && csi == 0:
		// Hosts before Linux 6.1.x's fix ask every controller for the
		// NVM command set limits: none here.
		data = make([]byte, identifyLen)
	default:
		return c.complete(cid, 0, StatusInvalidField|StatusDNR)
	}
	return c.transfer(q, data, uint64(len(data)))
}

// transfer sends want bytes of data (data, then zeros) to the host in
// C2HData PDUs and completes the command.
func (c *conn) transfer(q *SQE, data []byte, want uint64) error {
	cid := q.CID()
	g := q.SGL()
	if g.Type != sglTransportData {
		return c.complete(cid, 0, StatusSGLTypeInvalid|StatusDNR)
	}
	if uint64(g.Length) < want {
		return c.complete(cid, 0, StatusSGLLengthInvalid|StatusDNR)
	}
	for off := uint64(0); off < want; {
		n := min(want-off, c2hChunk)
		chunk := make([]byte, n)
		if off < uint64(len(data)) {
			copy(chunk, data[off:])
		}
		if err := c.send(&C2HData{CID: cid, Offset: uint32(off), Last: off+n == want, Data: chunk}, c.f); err != nil {
			return err
		}
		off += n
	}
	return c.complete(cid, 0, StatusSuccess)
}

func (c *conn) getLogPage(q *SQE) error {
	cid := q.CID()
	dw10 := q.DW(10)
	lid, rae := dw10&0xff, dw10&(1<<15) != 0
	numd := (uint64(q.DW(11)&0xffff)<<16 | uint64(dw10>>16)) + 1
	length := numd * 4
	off := uint64(q.DW(13))<<32 | uint64(q.DW(12))
	if lid != lidDiscovery || off%4 != 0 || length > maxTransfer {
		return c.complete(cid, 0, StatusInvalidField|StatusDNR)
	}
	if cur := c.visible(); !slices.Equal(cur, c.logSet) {
		c.logSet = cur
		c.gen++
	}
	page := discoveryLog(c.gen, c.self(), c.logSet)
	if off > uint64(len(page)) {
		return c.complete(cid, 0, StatusInvalidField|StatusDNR)
	}
	if err := c.transfer(q, page[off:], length); err != nil {
		return err
	}
	// The notice is unmasked by a read with RAE clear (the spec) or by a
	// read of the whole page: nvme-cli (libnvme) reads only the header,
	// with RAE set, when it counts no records, and would otherwise never
	// hear of the next change.
	if !rae || (off == 0 && length >= uint64(len(page))) {
		c.masked = false
	}
	return nil
}

func (c *conn) setFeatures(q *SQE) error {
	cid := q.CID()
	dw10, v := q.DW(10), q.DW(11)
	if dw10&(1<<31) != 0 {
		return c.complete(cid, 0, StatusFeatureNotSaveable|StatusDNR)
	}
	switch dw10 & 0xff {
	case fidAsyncConfig:
		c.aec = v & aecDiscoveryChange
		if err := c.complete(cid, 0, StatusSuccess); err != nil {
			return err
		}
		return c.checkAEN()
	case fidKeepAlive:
		c.kato = katoDuration(v)
		c.resetKeepAlive()
		if c.kato == 0 {
			c.timer.Stop()
		}
		return c.complete(cid, 0, StatusSuccess)
	}
	return c.complete(cid, 0, StatusInvalidField|StatusDNR)
}

func (c *conn) getFeatures(q *SQE) (uint64, Status) {
	dw10 := q.DW(10)
	fid, sel := dw10&0xff, (dw10>>8)&7
	if fid != fidAsyncConfig && fid != fidKeepAlive {
		return 0, StatusInvalidField | StatusDNR
	}
	switch sel {
	case 0, 2: // current; saved (not saveable: the current value)
	case 1:
		return 0, StatusSuccess // default: off, 0
	case 3:
		return 1 << 2, StatusSuccess // changeable, not saveable, not per namespace
	default:
		return 0, StatusInvalidField | StatusDNR
	}
	if fid == fidAsyncConfig {
		return uint64(c.aec), StatusSuccess
	}
	return uint64(c.kato / time.Millisecond), StatusSuccess
}

// visible returns the entries this host may see now, sorted.
func (c *conn) visible() []Entry {
	es := c.s.src.Visible(c.hostNQN, c.host)
	n := len(es)
	// An entry whose NQN a host's nvme connect-all would hand on to the
	// kernel with option separators is never served (defence in depth:
	// the fabric refuses such NQNs where they enter).
	es = slices.DeleteFunc(es, func(e Entry) bool { return e.NQN != "" && !nqnOK(e.NQN) })
	if n != len(es) {
		c.s.met.entriesRefused.Add(float64(n - len(es)))
	}
	return sortEntries(es)
}

// checkAEN completes an outstanding Asynchronous Event Request with the
// discovery log change notice when the host asked for it, is not masked
// by an unread notice, and its entries changed since it last read the log.
func (c *conn) checkAEN() error {
	if c.aec&aecDiscoveryChange == 0 || c.masked || len(c.aers) == 0 {
		return nil
	}
	if slices.Equal(c.visible(), c.logSet) {
		return nil
	}
	cid := c.aers[0]
	c.aers = c.aers[1:]
	c.masked = true
	c.s.met.aens.Inc()
	c.log.Info("discovery log changed: notifying the host", "host_nqn", c.hostNQN)
	return c.complete(cid, AENDiscoveryChange, StatusSuccess)
}

// self is the log entry that describes this controller as the host reached
// it: the connection's local address and port. Nil when that is not a TCP
// address (a pipe in tests).
func (c *conn) self() *Entry {
	ta, ok := c.nc.LocalAddr().(*net.TCPAddr)
	if !ok {
		return nil
	}
	ap := ta.AddrPort()
	return &Entry{Transport: TransportTCP, Addr: ap.Addr().Unmap(), Port: ap.Port(), Current: true}
}
