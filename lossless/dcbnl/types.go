package dcbnl

// NumTCs is the number of priorities and traffic classes IEEE DCB describes.
const NumTCs = 8

// Transmission selection algorithms (IEEE_8021QAZ_TSA_*).
const (
	TSAStrict   = 0
	TSACBShaper = 1
	TSAETS      = 2
	TSAVendor   = 255
)

// APP selectors (IEEE_8021QAZ_APP_SEL_* and DCB_APP_SEL_PCP).
const (
	SelEthertype = 1
	SelStream    = 2
	SelDgram     = 3
	SelAny       = 4
	SelDSCP      = 5
	SelPCP       = 255
)

// ETS is struct ieee_ets: per-TC bandwidth, algorithm and the priority map.
type ETS struct {
	Willing    uint8
	ETSCap     uint8
	CBS        uint8
	TCTxBW     [NumTCs]uint8
	TCRxBW     [NumTCs]uint8
	TSA        [NumTCs]uint8
	PrioTC     [NumTCs]uint8
	TCRecoBW   [NumTCs]uint8
	TCRecoTSA  [NumTCs]uint8
	RecoPrioTC [NumTCs]uint8
}

// PFC is struct ieee_pfc. Enabled is a bit mask of priorities; mlx5 reports
// the cable length in metres as Delay.
type PFC struct {
	Cap         uint8
	Enabled     uint8
	MBC         uint8
	Delay       uint16
	Requests    [NumTCs]uint64
	Indications [NumTCs]uint64
}

// On reports whether PFC is enabled on priority prio.
func (p PFC) On(prio uint8) bool { return p.Enabled&(1<<prio) != 0 }

// App is struct dcb_app: traffic matching Selector/Protocol (a DSCP for
// SelDSCP) gets Priority.
type App struct {
	Selector uint8
	Priority uint8
	Protocol uint16
}

// Buffer is struct dcbnl_buffer: which port buffer each priority uses and
// the buffers' sizes.
type Buffer struct {
	PrioBuffer [NumTCs]uint8
	Size       [NumTCs]uint32
	Total      uint32
}

// State is a device's IEEE DCB configuration. A nil pointer or empty slice
// means the device did not report that part.
type State struct {
	Ifname string
	ETS    *ETS
	PFC    *PFC
	Apps   []App
	Trust  []uint8 // APP selectors in trust order
	Buffer *Buffer
}
