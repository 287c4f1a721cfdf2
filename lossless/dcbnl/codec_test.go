package dcbnl

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/mdlayher/netlink"
)

// Structures laid out byte by byte as include/uapi/linux/dcbnl.h defines them
// (host byte order), independent of the decoder.

// etsBytes is struct ieee_ets for TC0 ets 50 %, TC3 ets 50 %, TC6 strict,
// prio_tc 0 0 0 3 0 0 6 0.
func etsBytes() []byte {
	b := make([]byte, 59)
	b[0], b[1], b[2] = 0, 8, 0 // willing, ets_cap, cbs
	tx := b[3:11]              // tc_tx_bw
	tx[0], tx[3] = 50, 50
	tsa := b[19:27] // tc_tsa, after tc_rx_bw at 11
	for i := range tsa {
		tsa[i] = TSAETS
	}
	tsa[6] = TSAStrict
	copy(b[27:35], []byte{0, 0, 0, 3, 0, 0, 6, 0}) // prio_tc
	return b
}

// pfcBytes is struct ieee_pfc with PFC on priority 3, delay 5 (mlx5: cable
// metres) and 7 pause requests sent on priority 3.
func pfcBytes() []byte {
	b := make([]byte, 136)
	b[0], b[1], b[2] = 8, 1<<3, 0 // pfc_cap, pfc_en, mbc
	binary.NativeEndian.PutUint16(b[4:], 5)
	binary.NativeEndian.PutUint64(b[8+3*8:], 7)   // requests[3]
	binary.NativeEndian.PutUint64(b[72+3*8:], 11) // indications[3]
	return b
}

func appBytes(sel, prio uint8, proto uint16) []byte {
	b := []byte{sel, prio, 0, 0}
	binary.NativeEndian.PutUint16(b[2:], proto)
	return b
}

// bufferBytes is struct dcbnl_buffer with priority 3 on buffer 1.
func bufferBytes() []byte {
	b := make([]byte, 44)
	b[3] = 1
	binary.NativeEndian.PutUint32(b[8:], 130000) // buffer_size[0]
	binary.NativeEndian.PutUint32(b[12:], 65536) // buffer_size[1]
	binary.NativeEndian.PutUint32(b[40:], 262144)
	return b
}

// reply builds an RTM_GETDCB DCB_CMD_IEEE_GET reply body the way
// dcbnl_ieee_fill lays it out.
func reply(t *testing.T) []byte {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	ae.String(attrIfname, "ens1f0")
	ae.Nested(attrIEEE, func(n *netlink.AttributeEncoder) error {
		n.Bytes(ieeeETS, etsBytes())
		n.Bytes(ieeePFC, pfcBytes())
		n.Nested(ieeeAppTable, func(a *netlink.AttributeEncoder) error {
			a.Bytes(appIEEE, appBytes(SelDSCP, 3, 24))
			a.Bytes(appIEEE, appBytes(SelDSCP, 6, 48))
			a.Bytes(appDCB, appBytes(SelPCP, 3, 3))
			return nil
		})
		n.Bytes(ieeeBuffer, bufferBytes())
		n.Nested(ieeeAppTrustTable, func(a *netlink.AttributeEncoder) error {
			a.Uint8(appIEEE, SelDSCP)
			a.Uint8(appDCB, SelPCP)
			return nil
		})
		return nil
	})
	attrs, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte{0, cmdIEEEGet, 0, 0}, attrs...)
}

func TestDecodeState(t *testing.T) {
	st, err := DecodeState(reply(t))
	if err != nil {
		t.Fatal(err)
	}
	if st.Ifname != "ens1f0" {
		t.Errorf("ifname %q", st.Ifname)
	}
	if st.ETS == nil || st.ETS.TCTxBW != [8]uint8{50, 0, 0, 50} || st.ETS.TSA[6] != TSAStrict || st.ETS.TSA[3] != TSAETS ||
		st.ETS.PrioTC != [8]uint8{0, 0, 0, 3, 0, 0, 6, 0} || st.ETS.ETSCap != 8 {
		t.Errorf("ETS %+v", st.ETS)
	}
	if st.PFC == nil || !st.PFC.On(3) || st.PFC.On(0) || st.PFC.Delay != 5 || st.PFC.Requests[3] != 7 || st.PFC.Indications[3] != 11 {
		t.Errorf("PFC %+v", st.PFC)
	}
	wantApps := []App{{SelDSCP, 3, 24}, {SelDSCP, 6, 48}, {SelPCP, 3, 3}}
	if !reflect.DeepEqual(st.Apps, wantApps) {
		t.Errorf("apps %+v, want %+v", st.Apps, wantApps)
	}
	if !reflect.DeepEqual(st.Trust, []uint8{SelDSCP, SelPCP}) {
		t.Errorf("trust %v", st.Trust)
	}
	if st.Buffer == nil || st.Buffer.PrioBuffer[3] != 1 || st.Buffer.Size[1] != 65536 || st.Buffer.Total != 262144 {
		t.Errorf("buffer %+v", st.Buffer)
	}
}

// A device that reports only PFC leaves the other parts nil.
func TestDecodeStatePartial(t *testing.T) {
	ae := netlink.NewAttributeEncoder()
	ae.Nested(attrIEEE, func(n *netlink.AttributeEncoder) error {
		n.Bytes(ieeePFC, pfcBytes())
		return nil
	})
	attrs, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	st, err := DecodeState(append([]byte{0, cmdIEEEGet, 0, 0}, attrs...))
	if err != nil {
		t.Fatal(err)
	}
	if st.PFC == nil || st.ETS != nil || st.Buffer != nil || st.Apps != nil {
		t.Errorf("%+v", st)
	}
}

func TestDecodeStateErrors(t *testing.T) {
	if _, err := DecodeState([]byte{0, cmdIEEEGet}); err == nil {
		t.Error("short header accepted")
	}
	if _, err := DecodeState([]byte{0, 22, 0, 0}); err == nil {
		t.Error("wrong command accepted")
	}
	ae := netlink.NewAttributeEncoder()
	ae.Nested(attrIEEE, func(n *netlink.AttributeEncoder) error {
		n.Bytes(ieeeETS, etsBytes()[:30])
		return nil
	})
	attrs, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeState(append([]byte{0, cmdIEEEGet, 0, 0}, attrs...)); !errors.Is(err, errShort) {
		t.Errorf("truncated ieee_ets: err = %v", err)
	}
}

// The request is a dcbmsg (AF_UNSPEC, DCB_CMD_IEEE_GET) then DCB_ATTR_IFNAME
// as a NUL-terminated string: len 4+5=9 → 0x0009, type 1, "eth0\0", 3 pad.
func TestEncodeGetRequest(t *testing.T) {
	got, err := EncodeGetRequest("eth0")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0, 21, 0, 0}
	want = binary.NativeEndian.AppendUint16(want, 9)
	want = binary.NativeEndian.AppendUint16(want, 1)
	want = append(want, 'e', 't', 'h', '0', 0, 0, 0, 0)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got % x\nwant % x", got, want)
	}
}

func FuzzDecodeState(f *testing.F) {
	f.Add([]byte{0, cmdIEEEGet, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = DecodeState(data) // must not panic
	})
}
