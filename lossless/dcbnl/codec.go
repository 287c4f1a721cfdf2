package dcbnl

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"
)

// Message and attribute numbers from include/uapi/linux/dcbnl.h and
// rtnetlink.h.
const (
	rtmGetDCB  = 78 // RTM_GETDCB
	cmdIEEEGet = 21 // DCB_CMD_IEEE_GET

	attrIfname = 1  // DCB_ATTR_IFNAME
	attrIEEE   = 13 // DCB_ATTR_IEEE

	ieeeETS           = 1  // DCB_ATTR_IEEE_ETS
	ieeePFC           = 2  // DCB_ATTR_IEEE_PFC
	ieeeAppTable      = 3  // DCB_ATTR_IEEE_APP_TABLE
	ieeeBuffer        = 10 // DCB_ATTR_DCB_BUFFER
	ieeeAppTrustTable = 11 // DCB_ATTR_DCB_APP_TRUST_TABLE

	appIEEE = 1 // DCB_ATTR_IEEE_APP (IEEE selectors)
	appDCB  = 2 // DCB_ATTR_DCB_APP (selectors outside IEEE, e.g. PCP)

	dcbmsgLen = 4   // struct dcbmsg { u8 family; u8 cmd; u16 pad; }
	etsLen    = 59  // struct ieee_ets
	pfcLen    = 136 // struct ieee_pfc (u16 delay at 4, u64 arrays from 8)
	appLen    = 4   // struct dcb_app
	bufferLen = 44  // struct dcbnl_buffer
)

// errShort reports a structure shorter than its C layout.
var errShort = errors.New("attribute shorter than its structure")

// EncodeGetRequest returns the body of an RTM_GETDCB DCB_CMD_IEEE_GET request
// for a device.
func EncodeGetRequest(ifname string) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.String(attrIfname, ifname)
	attrs, err := ae.Encode()
	if err != nil {
		return nil, fmt.Errorf("dcbnl: encode request for %s: %w", ifname, err)
	}
	return append([]byte{0, cmdIEEEGet, 0, 0}, attrs...), nil
}

// DecodeState parses the body of an RTM_GETDCB DCB_CMD_IEEE_GET reply.
func DecodeState(body []byte) (State, error) {
	if len(body) < dcbmsgLen {
		return State{}, fmt.Errorf("dcbnl: reply of %d bytes has no dcbmsg header", len(body))
	}
	if body[1] != cmdIEEEGet {
		return State{}, fmt.Errorf("dcbnl: reply command %d, want DCB_CMD_IEEE_GET (%d)", body[1], cmdIEEEGet)
	}
	ad, err := netlink.NewAttributeDecoder(body[dcbmsgLen:])
	if err != nil {
		return State{}, fmt.Errorf("dcbnl: decode reply: %w", err)
	}
	var st State
	for ad.Next() {
		switch ad.Type() {
		case attrIfname:
			st.Ifname = ad.String()
		case attrIEEE:
			ad.Nested(func(nad *netlink.AttributeDecoder) error { return decodeIEEE(nad, &st) })
		}
	}
	if err := ad.Err(); err != nil {
		return State{}, fmt.Errorf("dcbnl: decode reply: %w", err)
	}
	return st, nil
}

// decodeIEEE parses the DCB_ATTR_IEEE nest.
func decodeIEEE(ad *netlink.AttributeDecoder, st *State) error {
	for ad.Next() {
		var err error
		switch ad.Type() {
		case ieeeETS:
			st.ETS, err = decodeETS(ad.Bytes())
		case ieeePFC:
			st.PFC, err = decodePFC(ad.Bytes())
		case ieeeBuffer:
			st.Buffer, err = decodeBuffer(ad.Bytes())
		case ieeeAppTable:
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				apps, err := decodeApps(nad)
				st.Apps = apps
				return err
			})
		case ieeeAppTrustTable:
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				for nad.Next() {
					st.Trust = append(st.Trust, nad.Uint8())
				}
				return nil
			})
		}
		if err != nil {
			return fmt.Errorf("attribute %d: %w", ad.Type(), err)
		}
	}
	return nil
}

func decodeETS(b []byte) (*ETS, error) {
	if len(b) < etsLen {
		return nil, fmt.Errorf("ieee_ets: %d bytes: %w", len(b), errShort)
	}
	e := &ETS{Willing: b[0], ETSCap: b[1], CBS: b[2]}
	arrays := []*[NumTCs]uint8{&e.TCTxBW, &e.TCRxBW, &e.TSA, &e.PrioTC, &e.TCRecoBW, &e.TCRecoTSA, &e.RecoPrioTC}
	for i, a := range arrays {
		copy(a[:], b[3+i*NumTCs:])
	}
	return e, nil
}

func decodePFC(b []byte) (*PFC, error) {
	if len(b) < pfcLen {
		return nil, fmt.Errorf("ieee_pfc: %d bytes: %w", len(b), errShort)
	}
	p := &PFC{Cap: b[0], Enabled: b[1], MBC: b[2], Delay: binary.NativeEndian.Uint16(b[4:])}
	for i := range NumTCs {
		p.Requests[i] = binary.NativeEndian.Uint64(b[8+8*i:])
		p.Indications[i] = binary.NativeEndian.Uint64(b[72+8*i:])
	}
	return p, nil
}

func decodeBuffer(b []byte) (*Buffer, error) {
	if len(b) < bufferLen {
		return nil, fmt.Errorf("dcbnl_buffer: %d bytes: %w", len(b), errShort)
	}
	buf := &Buffer{Total: binary.NativeEndian.Uint32(b[40:])}
	copy(buf.PrioBuffer[:], b)
	for i := range NumTCs {
		buf.Size[i] = binary.NativeEndian.Uint32(b[8+4*i:])
	}
	return buf, nil
}

// decodeApps parses the entries of DCB_ATTR_IEEE_APP_TABLE.
func decodeApps(ad *netlink.AttributeDecoder) ([]App, error) {
	var apps []App
	for ad.Next() {
		if ad.Type() != appIEEE && ad.Type() != appDCB {
			continue
		}
		b := ad.Bytes()
		if len(b) < appLen {
			return nil, fmt.Errorf("dcb_app: %d bytes: %w", len(b), errShort)
		}
		apps = append(apps, App{Selector: b[0], Priority: b[1], Protocol: binary.NativeEndian.Uint16(b[2:])})
	}
	return apps, nil
}
