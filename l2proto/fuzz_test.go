package l2proto

import (
	"fmt"
	"reflect"
	"testing"
)

// seedCaptures adds every captured frame (or its payload) to the corpus.
func seedCaptures(f *testing.F, payloadOnly bool) {
	for _, file := range []string{"host-register.pcap", "notify-variants.pcap", "notify-cancel-port0.pcap", "emu-session.pcap"} {
		for _, fr := range readPcap(f, file) {
			if payloadOnly {
				f.Add(fr.data[ethHeaderLen:])
			} else {
				f.Add(fr.data)
			}
		}
	}
}

// FuzzDecodeFrame: any input decodes or errors without panicking, and what
// decodes re-encodes to something that decodes to the same values.
func FuzzDecodeFrame(f *testing.F) {
	seedCaptures(f, false)
	dirty := readPcap(f, "notify-active.pcap")[0].data
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := DecodeFrame(b)
		// A reused Decoder (here: after a notification) agrees with
		// DecodeFrame on every input.
		var dec Decoder
		dec.Decode(dirty)
		if got, gerr := dec.Decode(b); fmt.Sprint(gerr) != fmt.Sprint(err) || !sameFrame(got, fr) {
			t.Fatalf("Decoder %+v, %v; DecodeFrame %+v, %v", got, gerr, fr, err)
		}
		if err != nil {
			if DropReason(err) == "other" {
				t.Fatalf("error without drop reason: %v", err)
			}
			if fr.Message == nil {
				return
			}
		}
		var enc []byte
		switch {
		case fr.LLDP != nil:
			enc, err = LLDPFrame(fr.Source, fr.LLDP)
		case fr.Message != nil:
			enc, err = MessageFrame(fr.Source, fr.Message)
		default:
			t.Fatal("decoded frame with neither LLDP nor message")
		}
		if err != nil {
			t.Fatalf("re-encode %+v: %v", fr, err)
		}
		again, err := DecodeFrame(enc)
		if err != nil {
			t.Fatalf("decode of re-encoded frame: %v", err)
		}
		if !reflect.DeepEqual(again, fr) {
			t.Fatalf("round trip\n got %+v\nwant %+v", again, fr)
		}
	})
}

// FuzzMessage round-trips 0x88A7 payloads, including partly valid ones.
func FuzzMessage(f *testing.F) {
	seedCaptures(f, true)
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Message
		err := m.UnmarshalBinary(b)
		if len(m.Notifications)+len(m.Acks)+len(m.Queries) == 0 {
			if err == nil {
				t.Fatal("no TLVs and no error")
			}
			return
		}
		enc, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("re-encode %+v: %v", m, err)
		}
		var again Message
		if err := again.UnmarshalBinary(enc); err != nil {
			t.Fatalf("decode of re-encoded message: %v", err)
		}
		if !reflect.DeepEqual(again, m) {
			t.Fatalf("round trip\n got %+v\nwant %+v", again, m)
		}
	})
}

// FuzzLLDP round-trips LLDPDUs.
func FuzzLLDP(f *testing.F) {
	for _, fr := range readPcap(f, "host-register.pcap") {
		if fr.data[12] == 0x88 && fr.data[13] == 0xcc {
			f.Add(fr.data[ethHeaderLen:])
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var l LLDPDU
		if err := l.UnmarshalBinary(b); err != nil {
			return
		}
		enc, err := l.MarshalBinary()
		if err != nil {
			t.Fatalf("re-encode %+v: %v", l, err)
		}
		var again LLDPDU
		if err := again.UnmarshalBinary(enc); err != nil {
			t.Fatalf("decode of re-encoded LLDPDU: %v", err)
		}
		if !reflect.DeepEqual(again, l) {
			t.Fatalf("round trip\n got %+v\nwant %+v", again, l)
		}
	})
}
