package sim

// mmu is the switch's buffer accounting, in buffer bytes (whole cells).
// Lossless ingress priority groups follow the HPCC simulator's switch MMU:
// bytes go to the reserve, then the shared pool while the group's shared
// use is under the dynamic threshold, then to the group's headroom. The
// lossy class shares the pool under the same threshold and drops above it.
type mmu struct {
	cfg       SwitchConfig
	ingress   []int64 // per lossless ingress port: reserve + shared bytes
	hdrm      []int64 // per lossless ingress port: headroom bytes
	paused    []bool  // XOFF in force per port
	shared    int64   // shared pool in use, both classes
	lossy     int64   // lossy bytes queued (all in the shared pool)
	fixedCost int64   // reserves and headroom set aside
}

func newMMU(cfg SwitchConfig, ports int) *mmu {
	return &mmu{
		cfg:       cfg,
		ingress:   make([]int64, ports),
		hdrm:      make([]int64, ports),
		paused:    make([]bool, ports),
		fixedCost: int64(ports) * int64(cfg.ReserveBytes+cfg.HeadroomBytes),
	}
}

// threshold is the shared bytes one priority group may use now.
func (m *mmu) threshold() int64 {
	t := max(m.cfg.BufferBytes-m.fixedCost-m.shared, 0) >> m.cfg.DynamicShift
	if m.cfg.XoffThresholdBytes > 0 {
		t = min(t, m.cfg.XoffThresholdBytes)
	}
	return t
}

func (m *mmu) sharedUsed(port int) int64 {
	return max(m.ingress[port]-int64(m.cfg.ReserveBytes), 0)
}

// admitLossless accounts a lossless frame; false means it is dropped
// because both its shared allowance and its headroom are full.
func (m *mmu) admitLossless(port int, cells int64) bool {
	th := m.threshold()
	newBytes := m.ingress[port] + cells
	over := newBytes - int64(m.cfg.ReserveBytes)
	switch {
	case over <= 0:
		m.ingress[port] = newBytes
	case over <= th:
		m.shared += min(cells, over)
		m.ingress[port] = newBytes
	case m.hdrm[port]+cells <= int64(m.cfg.HeadroomBytes):
		m.hdrm[port] += cells
	default:
		return false
	}
	return true
}

// releaseLossless frees a lossless frame's bytes, headroom first.
func (m *mmu) releaseLossless(port int, cells int64) {
	fromHdrm := min(m.hdrm[port], cells)
	m.hdrm[port] -= fromHdrm
	rest := cells - fromHdrm
	if rest == 0 {
		return
	}
	m.shared -= min(rest, m.sharedUsed(port))
	m.ingress[port] -= rest
}

// shouldPause: headroom in use or the shared allowance reached.
func (m *mmu) shouldPause(port int) bool {
	return !m.paused[port] && (m.hdrm[port] > 0 || m.sharedUsed(port) >= m.threshold())
}

// shouldResume: headroom empty and shared use back under the threshold.
func (m *mmu) shouldResume(port int) bool {
	if !m.paused[port] || m.hdrm[port] > 0 {
		return false
	}
	used := m.sharedUsed(port)
	return used == 0 || used+int64(m.cfg.ResumeOffsetBytes) <= m.threshold()
}

// admitLossy accounts a lossy frame; false means drop-tail.
func (m *mmu) admitLossy(cells int64) bool {
	if m.lossy+cells > m.threshold() {
		return false
	}
	m.lossy += cells
	m.shared += cells
	return true
}

func (m *mmu) releaseLossy(cells int64) {
	m.lossy -= cells
	m.shared -= cells
}
