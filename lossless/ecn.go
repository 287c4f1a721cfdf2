package lossless

// ECNThresholds are the marking thresholds for one port speed.
type ECNThresholds struct {
	KminBytes   uint64
	KmaxBytes   uint64
	PmaxPercent uint8
}

// ScaleECN scales Kmin and Kmax linearly from the reference speed to
// speedMbps, as the HPCC simulator's production settings do
// (Kmin = 100 KB × bw/25G, Kmax = 400 KB × bw/25G). Pmax does not scale.
func ScaleECN(e ECN, speedMbps uint32) ECNThresholds {
	if e.ReferenceMbps == 0 {
		return ECNThresholds{KminBytes: e.KminBytes, KmaxBytes: e.KmaxBytes, PmaxPercent: e.PmaxPercent}
	}
	return ECNThresholds{
		KminBytes:   e.KminBytes * uint64(speedMbps) / uint64(e.ReferenceMbps),
		KmaxBytes:   e.KmaxBytes * uint64(speedMbps) / uint64(e.ReferenceMbps),
		PmaxPercent: e.PmaxPercent,
	}
}
