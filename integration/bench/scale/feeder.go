package scale

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/osrg/gobgp/v3/pkg/packet/bgp"
)

// Feeder is one raw iBGP client session, as a switch agent would hold it,
// that does nothing but send records: it opens the session (opaque and
// RT-constraint families, four-octet AS), sends keepalives, reads and drops
// whatever the reflector sends, and writes the UPDATEs of Send.
type Feeder struct {
	conn net.Conn
	mu   sync.Mutex // serialises writes (Send, keepalives)
	w    *bufio.Writer
	stop chan struct{}
	wg   sync.WaitGroup
	errM sync.Mutex
	err  error
}

// holdTime is what the feeder offers; the reflector's smaller one wins and
// keepalives go every keepaliveEvery.
const (
	holdTime       = 9
	keepaliveEvery = 3 * time.Second
)

// Dial opens a session from local to the reflector at remote; ctx bounds
// the connection and the OPEN exchange.
func Dial(ctx context.Context, local netip.Addr, remote netip.AddrPort, asn uint32) (*Feeder, error) {
	d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(local, 0))}
	conn, err := d.DialContext(ctx, "tcp", remote.String())
	if err != nil {
		return nil, fmt.Errorf("feeder %s: %w", local, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	f := &Feeder{conn: conn, w: bufio.NewWriterSize(conn, 64<<10), stop: make(chan struct{})}
	if err := f.open(local, asn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("feeder %s: %w", local, err)
	}
	conn.SetDeadline(time.Time{})
	f.wg.Add(2)
	go f.drain()
	go f.keepalive()
	return f, nil
}

func (f *Feeder) open(local netip.Addr, asn uint32) error {
	caps := []bgp.ParameterCapabilityInterface{
		bgp.NewCapMultiProtocol(bgp.RF_OPAQUE),
		bgp.NewCapMultiProtocol(bgp.RF_RTC_UC),
		bgp.NewCapRouteRefresh(),
		bgp.NewCapFourOctetASNumber(asn),
	}
	as16 := uint16(asn)
	if asn > 0xFFFF {
		as16 = bgp.AS_TRANS
	}
	open := bgp.NewBGPOpenMessage(as16, holdTime, local.String(),
		[]bgp.OptionParameterInterface{bgp.NewOptionParameterCapability(caps)})
	if err := f.write(open); err != nil {
		return err
	}
	if err := f.w.Flush(); err != nil {
		return err
	}
	for {
		m, err := readMessage(f.conn)
		if err != nil {
			return err
		}
		switch m.Header.Type {
		case bgp.BGP_MSG_OPEN:
			if err := f.write(bgp.NewBGPKeepAliveMessage()); err != nil {
				return err
			}
			if err := f.w.Flush(); err != nil {
				return err
			}
		case bgp.BGP_MSG_KEEPALIVE:
			return nil // established
		case bgp.BGP_MSG_NOTIFICATION:
			n := m.Body.(*bgp.BGPNotification)
			return fmt.Errorf("reflector sent NOTIFICATION %d/%d", n.ErrorCode, n.ErrorSubcode)
		}
	}
}

// readMessage reads one whole BGP message.
func readMessage(r io.Reader) (*bgp.BGPMessage, error) {
	hdr := make([]byte, bgp.BGP_HEADER_LENGTH)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(hdr[16:18]))
	if n < bgp.BGP_HEADER_LENGTH {
		return nil, fmt.Errorf("BGP message length %d", n)
	}
	buf := make([]byte, n)
	copy(buf, hdr)
	if _, err := io.ReadFull(r, buf[bgp.BGP_HEADER_LENGTH:]); err != nil {
		return nil, err
	}
	return bgp.ParseBGPMessage(buf)
}

func (f *Feeder) write(m *bgp.BGPMessage) error {
	b, err := m.Serialize()
	if err != nil {
		return err
	}
	_, err = f.w.Write(b)
	return err
}

// drain reads and drops what the reflector sends; a NOTIFICATION or a
// closed connection ends the session and is kept for Err.
func (f *Feeder) drain() {
	defer f.wg.Done()
	r := bufio.NewReaderSize(f.conn, 64<<10)
	hdr := make([]byte, bgp.BGP_HEADER_LENGTH)
	for {
		if _, err := io.ReadFull(r, hdr); err != nil {
			f.fail(err)
			return
		}
		n := int(binary.BigEndian.Uint16(hdr[16:18]))
		if n < bgp.BGP_HEADER_LENGTH {
			f.fail(fmt.Errorf("BGP message length %d", n))
			return
		}
		if hdr[18] == bgp.BGP_MSG_NOTIFICATION {
			f.fail(errors.New("reflector sent a NOTIFICATION"))
			return
		}
		if _, err := r.Discard(n - bgp.BGP_HEADER_LENGTH); err != nil {
			f.fail(err)
			return
		}
	}
}

func (f *Feeder) keepalive() {
	defer f.wg.Done()
	t := time.NewTicker(keepaliveEvery)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
			f.mu.Lock()
			err := f.write(bgp.NewBGPKeepAliveMessage())
			if err == nil {
				err = f.w.Flush()
			}
			f.mu.Unlock()
			if err != nil {
				f.fail(err)
				return
			}
		}
	}
}

func (f *Feeder) fail(err error) {
	f.errM.Lock()
	defer f.errM.Unlock()
	select {
	case <-f.stop:
		return // closing: not a failure
	default:
	}
	if f.err == nil {
		f.err = err
	}
}

// Err returns what ended the session early, or nil.
func (f *Feeder) Err() error {
	f.errM.Lock()
	defer f.errM.Unlock()
	return f.err
}

// Send writes one UPDATE per record, as GoBGP v3 does for the opaque
// family: ORIGIN, an empty AS_PATH, LOCAL_PREF, MP_REACH_NLRI and the
// record's route target.
func (f *Feeder) Send(recs []Record) error {
	const batch = 256 // records per lock hold, so keepalives get through
	for len(recs) > 0 {
		n := min(batch, len(recs))
		f.mu.Lock()
		var err error
		for _, r := range recs[:n] {
			if err = f.write(Update(r)); err != nil {
				break
			}
		}
		if err == nil {
			err = f.w.Flush()
		}
		f.mu.Unlock()
		if err != nil {
			return fmt.Errorf("feeder: %w", err)
		}
		recs = recs[n:]
	}
	return f.Err()
}

// Update is the UPDATE message of one record.
func Update(r Record) *bgp.BGPMessage {
	rt := bgp.NewTwoOctetAsSpecificExtended(bgp.EC_SUBTYPE_ROUTE_TARGET, uint16(r.RT.Global), r.RT.Local, true)
	if r.RT.Global > 0xFFFF {
		rt4 := bgp.NewFourOctetAsSpecificExtended(bgp.EC_SUBTYPE_ROUTE_TARGET, r.RT.Global, uint16(r.RT.Local), true)
		return update(r, rt4)
	}
	return update(r, rt)
}

func update(r Record, rt bgp.ExtendedCommunityInterface) *bgp.BGPMessage {
	attrs := []bgp.PathAttributeInterface{
		bgp.NewPathAttributeOrigin(bgp.BGP_ORIGIN_ATTR_TYPE_IGP),
		bgp.NewPathAttributeAsPath(nil),
		bgp.NewPathAttributeLocalPref(100),
		bgp.NewPathAttributeMpReachNLRI("0.0.0.0", []bgp.AddrPrefixInterface{bgp.NewOpaqueNLRI(r.Key, r.Value)}),
		bgp.NewPathAttributeExtendedCommunities([]bgp.ExtendedCommunityInterface{rt}),
	}
	return bgp.NewBGPUpdateMessage(nil, attrs, nil)
}

// Close ends the session (the reflector sees the TCP connection close; its
// records are withdrawn unless graceful restart keeps them).
func (f *Feeder) Close() {
	f.errM.Lock()
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	f.errM.Unlock()
	f.conn.Close()
	f.wg.Wait()
}
