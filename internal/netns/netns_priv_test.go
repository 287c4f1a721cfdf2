//go:build privileged

package netns_test

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"

	"github.com/openinof/inof/internal/netns"
)

// TestPrivVethFrame creates two namespaces joined by a veth and passes one
// Ethernet frame from one to the other over AF_PACKET sockets.
func TestPrivVethFrame(t *testing.T) {
	a := netns.New(t, "a")
	b := netns.New(t, "b")
	netns.Veth(t, a, "va", b, "vb")

	const etherType = 0x88B5 // IEEE local experimental
	open := func(ns *netns.NS, ifname string) (*packet.Conn, *net.Interface) {
		var c *packet.Conn
		var ifi *net.Interface
		err := ns.Do(func() error {
			var err error
			if ifi, err = net.InterfaceByName(ifname); err != nil {
				return err
			}
			c, err = packet.Listen(ifi, packet.Raw, etherType, nil)
			return err
		})
		if err != nil {
			t.Fatalf("open %s in %s: %v", ifname, ns.Name, err)
		}
		t.Cleanup(func() { c.Close() })
		return c, ifi
	}
	ca, ifa := open(a, "va")
	cb, ifb := open(b, "vb")

	payload := []byte("inof netns helper test frame, padded to be long enough")
	f := ethernet.Frame{Destination: ifb.HardwareAddr, Source: ifa.HardwareAddr, EtherType: etherType, Payload: payload}
	raw, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// A frame sent before both ends have carrier is dropped by the veth:
	// send again until one arrives (the test is that one does).
	buf := make([]byte, 1514)
	var n int
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := ca.WriteTo(raw, &packet.Addr{HardwareAddr: ifb.HardwareAddr}); err != nil {
			t.Fatalf("send: %v", err)
		}
		if err := cb.SetReadDeadline(time.Now().Add(250 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		n, _, err = cb.ReadFrom(buf)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("receive: %v", err)
		}
	}
	var got ethernet.Frame
	if err := got.UnmarshalBinary(buf[:n]); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Source, ifa.HardwareAddr) || !bytes.HasPrefix(got.Payload, payload) {
		t.Fatalf("got frame from %s payload %q, want from %s payload %q", got.Source, got.Payload, ifa.HardwareAddr, payload)
	}
}
