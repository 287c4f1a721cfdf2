package topo

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/openinof/inof/internal/netns"
)

// nfnetlink_queue constants (linux/netfilter/nfnetlink_queue.h).
const (
	nfnlSubsysQueue   = 3
	nfqnlMsgPacket    = 0
	nfqnlMsgVerdict   = 1
	nfqnlMsgConfig    = 2
	nfqaPacketHdr     = 1
	nfqaVerdictHdr    = 2
	nfqaCfgCmd        = 1
	nfqaCfgParams     = 2
	nfqnlCfgCmdBind   = 1
	nfqnlCopyMeta     = 1
	nfAccept          = 1
	delayQueueBacklog = 4096
)

// delayQueue accepts every packet of one NFQUEUE a fixed delay after the
// kernel queued it: a one-way delay on whatever the iptables rule sends
// there. Verdicts go out in arrival order, so nothing is reordered.
type delayQueue struct {
	conn  *netlink.Conn
	queue uint16
	delay time.Duration
	held  chan heldPacket
	flush chan struct{} // closed by Close: accept what is held at once
	done  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
}

type heldPacket struct {
	id  uint32
	due time.Time
}

// openDelayQueue binds queue in namespace ns and starts holding packets.
func openDelayQueue(ns *netns.NS, queue uint16, delay time.Duration) (*delayQueue, error) {
	var conn *netlink.Conn
	err := ns.Do(func() (err error) {
		conn, err = netlink.Dial(unix.NETLINK_NETFILTER, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("topo: nfqueue in %s: %w", ns.Name, err)
	}
	q := &delayQueue{conn: conn, queue: queue, delay: delay, held: make(chan heldPacket, delayQueueBacklog),
		flush: make(chan struct{}), done: make(chan struct{})}
	bind := make([]byte, 4)
	bind[0] = nfqnlCfgCmdBind
	binary.BigEndian.PutUint16(bind[2:], unix.AF_INET)
	params := make([]byte, 5)
	binary.BigEndian.PutUint32(params, 0xffff)
	params[4] = nfqnlCopyMeta
	for _, attr := range []netlink.Attribute{{Type: nfqaCfgCmd, Data: bind}, {Type: nfqaCfgParams, Data: params}} {
		if err := q.request(nfqnlMsgConfig, attr); err != nil {
			conn.Close()
			return nil, fmt.Errorf("topo: nfqueue %d config: %w", queue, err)
		}
	}
	q.wg.Add(2)
	go q.receive()
	go q.release()
	return q, nil
}

// header is the nfgenmsg of every message: family, version 0, the queue.
func (q *delayQueue) header() []byte {
	b := make([]byte, 4)
	b[0] = unix.AF_UNSPEC
	binary.BigEndian.PutUint16(b[2:], q.queue)
	return b
}

func (q *delayQueue) request(msg uint16, attrs ...netlink.Attribute) error {
	body, err := netlink.MarshalAttributes(attrs)
	if err != nil {
		return err
	}
	_, err = q.conn.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(nfnlSubsysQueue<<8 | msg), Flags: netlink.Request | netlink.Acknowledge},
		Data:   append(q.header(), body...),
	})
	return err
}

// receive reads queued packets and hands their ids to release.
func (q *delayQueue) receive() {
	defer q.wg.Done()
	for {
		msgs, err := q.conn.Receive()
		if err != nil {
			return // closed
		}
		for _, m := range msgs {
			if m.Header.Type != netlink.HeaderType(nfnlSubsysQueue<<8|nfqnlMsgPacket) || len(m.Data) < 4 {
				continue
			}
			attrs, err := netlink.UnmarshalAttributes(m.Data[4:])
			if err != nil {
				continue
			}
			for _, a := range attrs {
				if a.Type == nfqaPacketHdr && len(a.Data) >= 4 {
					select {
					case q.held <- heldPacket{id: binary.BigEndian.Uint32(a.Data), due: time.Now().Add(q.delay)}:
					case <-q.done:
						return
					}
				}
			}
		}
	}
}

// release accepts each held packet when its delay is over.
func (q *delayQueue) release() {
	defer q.wg.Done()
	for {
		select {
		case <-q.done:
			return
		case p := <-q.held:
			select {
			case <-time.After(time.Until(p.due)):
			case <-q.flush:
			case <-q.done:
				return
			}
			v := make([]byte, 8)
			binary.BigEndian.PutUint32(v, nfAccept)
			binary.BigEndian.PutUint32(v[4:], p.id)
			body, _ := netlink.MarshalAttributes([]netlink.Attribute{{Type: nfqaVerdictHdr, Data: v}})
			q.conn.Send(netlink.Message{
				Header: netlink.Header{Type: netlink.HeaderType(nfnlSubsysQueue<<8 | nfqnlMsgVerdict), Flags: netlink.Request},
				Data:   append(q.header(), body...),
			})
		}
	}
}

// Close accepts what is still held and stops (remove the rule first, so
// nothing new is queued).
func (q *delayQueue) Close() error {
	var err error
	q.once.Do(func() {
		close(q.flush)
		for deadline := time.Now().Add(time.Second); len(q.held) > 0 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		close(q.done)
		err = q.conn.Close()
		q.wg.Wait()
		if errors.Is(err, unix.EBADF) {
			err = nil
		}
	})
	return err
}
