package l2proto

// Decoder decodes frames as DecodeFrame does (same values, same errors) into
// storage it owns and reuses, so that a receive loop allocates nothing per
// frame once the Decoder has seen a few. Use one Decoder per goroutine; the
// zero value is ready.
//
// What Decode returns is borrowed, not owned:
//   - Frame.LLDP and Frame.Message, and everything they point to, belong to
//     the Decoder and are overwritten by its next Decode;
//   - Frame.Source, LLDPDU.ChassisID and LLDPDU.PortID are views over the
//     frame buffer passed to Decode, and change when that buffer is reused.
//
// Strings (NQNs) and plain values (addresses, sequence numbers, a copied
// Notification, Ack or ZoneQuery) are the caller's to keep. Whoever stores
// anything else in long-lived state copies it first, as Registry.Observe
// does with the MAC and the LLDP IDs.
type Decoder struct {
	lldp  LLDPDU
	reg   Registration
	msg   Message
	names nameCache
}

// Decode decodes one untagged Ethernet frame (no FCS); see DecodeFrame for
// the rules and the Decoder for who owns the result.
func (d *Decoder) Decode(b []byte) (Frame, error) { return decodeFrame(b, d) }

// lldpDU returns the LLDPDU to decode into, reset: the Decoder's own, or a
// new one for a nil Decoder (an owning decode).
func (d *Decoder) lldpDU() *LLDPDU {
	if d == nil {
		return new(LLDPDU)
	}
	d.lldp = LLDPDU{}
	return &d.lldp
}

// registration returns the Registration to decode into: the Decoder's own,
// or a new one for a nil Decoder.
func (d *Decoder) registration() *Registration {
	if d == nil {
		return new(Registration)
	}
	return &d.reg
}

// message returns the Message to decode into, empty but keeping the
// capacity of its slices: the Decoder's own, or a new one for a nil Decoder.
func (d *Decoder) message() *Message {
	if d == nil {
		return new(Message)
	}
	d.msg = Message{Notifications: d.msg.Notifications[:0], Acks: d.msg.Acks[:0], Queries: d.msg.Queries[:0]}
	return &d.msg
}

// nameCache returns the Decoder's NQN cache, nil for a nil Decoder.
func (d *Decoder) nameCache() *nameCache {
	if d == nil {
		return nil
	}
	return &d.names
}

// maxCachedNames bounds a Decoder's NQN cache; at 255 bytes per NQN at most
// it holds well under 100 KB. A port faces few devices, each with a few
// NQNs, so the cache rarely fills; when it does, it starts over.
const maxCachedNames = 256

// nameCache hands out NQN strings: the same string for the same bytes, so
// decoding an NQN seen before allocates nothing. The strings are ordinary
// immutable strings, safe to keep.
type nameCache struct {
	m map[string]string
}

// str returns b as a string; a nil cache always allocates a new one.
func (c *nameCache) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if c == nil {
		return string(b)
	}
	if s, ok := c.m[string(b)]; ok {
		return s
	}
	if c.m == nil {
		c.m = make(map[string]string)
	} else if len(c.m) >= maxCachedNames {
		clear(c.m)
	}
	s := string(b)
	c.m[s] = s
	return s
}
