package dcbnl

import (
	"fmt"

	"github.com/mdlayher/netlink"
)

// netlinkRoute is NETLINK_ROUTE.
const netlinkRoute = 0

// Conn reads DCB state over an rtnetlink socket.
type Conn struct {
	c *netlink.Conn
}

// Dial opens an rtnetlink socket.
func Dial() (*Conn, error) {
	c, err := netlink.Dial(netlinkRoute, nil)
	if err != nil {
		return nil, fmt.Errorf("dcbnl: dial rtnetlink: %w", err)
	}
	return &Conn{c: c}, nil
}

// Close closes the socket.
func (c *Conn) Close() error { return c.c.Close() }

// Get reads the IEEE DCB state of a device. A device without DCB support
// (veth, loopback) fails with an error wrapping EOPNOTSUPP.
func (c *Conn) Get(ifname string) (State, error) {
	body, err := EncodeGetRequest(ifname)
	if err != nil {
		return State{}, err
	}
	msgs, err := c.c.Execute(netlink.Message{
		Header: netlink.Header{Type: rtmGetDCB, Flags: netlink.Request},
		Data:   body,
	})
	if err != nil {
		return State{}, fmt.Errorf("dcbnl: RTM_GETDCB %s: %w", ifname, err)
	}
	if len(msgs) != 1 {
		return State{}, fmt.Errorf("dcbnl: RTM_GETDCB %s: %d replies, want 1", ifname, len(msgs))
	}
	st, err := DecodeState(msgs[0].Data)
	if err != nil {
		return State{}, fmt.Errorf("dcbnl: %s: %w", ifname, err)
	}
	return st, nil
}
