package lossless

import "testing"

// IEEE 802.3 31B.3.7 pause response times as SONiC tabulates them
// (spec/lossless.md §2; sonic-swss cfgmgr/buffer_headroom_mellanox.lua).
func TestPauseQuanta(t *testing.T) {
	for speed, want := range map[uint32]uint32{
		100: 1, 1000: 2, 10000: 67, 25000: 80, 40000: 118, 50000: 147,
		100000: 394, 200000: 453, 400000: 905, 800000: 905,
	} {
		got, ok := PauseQuanta(speed)
		if !ok || got != want {
			t.Errorf("PauseQuanta(%d) = %d, %v; want %d", speed, got, ok, want)
		}
	}
	if _, ok := PauseQuanta(12345); ok {
		t.Error("PauseQuanta(12345) reports a value for a speed the table lacks")
	}
}

// spectrum2 is SONiC's ASIC_TABLE for Spectrum-2 with the profile's small
// packet share (50 %) and a lossless MTU.
func spectrum2(losslessMTU uint32) SwitchBuffer {
	return SwitchBuffer{CellBytes: 144, PipelineLatencyKB: 18, MACPHYDelayKB: 0.8, LosslessMTU: losslessMTU, SmallPacketPercent: 50}
}

// The current sonic-swss buffer_headroom_mellanox.lua, worked by hand for
// Spectrum-2, lossless MTU 4096, port MTU 9100 at 100G (the numbers issue
// 32 quotes: xoff 45,056 / 49,152 / 83,968 B at 5 / 40 / 300 m):
//
//	worst case ceil(144/64) = 3; small packets by size 100·64/((50·64 + 50·4096)/100) = 3.0769 %;
//	occupancy (100 − 3.0769 + 3·3.0769)/100 = 1.061538; peer response 394·64 = 25216;
//	cable 2·L·1e5·1e9/1.98e8/8000 = 631.31 / 5050.51 / 37878.79 B;
//	propagation 9100 + cable + 819.2 + 25216 = 35766.51 / 40185.71 / 73013.99;
//	xoff ceil1024(4096 + propagation·occupancy) = 43008 / 47104 / 81920, and 2048
//	more each because that is still 2 KiB short of ceil1024(4096 + 3·propagation);
//	xon ceil1024(18·1024) = 18432; size ceil1024(xoff + xon).
func TestSONiCHeadroomCurrentModel(t *testing.T) {
	for _, c := range []struct {
		cable, xoff, size uint32
	}{{5, 45056, 63488}, {40, 49152, 67584}, {300, 83968, 102400}} {
		got, err := SONiCHeadroom(Port{SpeedMbps: 100000, CableMeters: c.cable, MTU: 9100}, spectrum2(4096))
		if err != nil {
			t.Fatal(err)
		}
		if got != (SwitchHeadroom{Xoff: c.xoff, Xon: 18432, Size: c.size}) {
			t.Errorf("100G %d m: got %+v, want xoff %d xon 18432 size %d", c.cable, got, c.xoff, c.size)
		}
	}
}

// sonic-swss PR 3235 lists the script's output for SPC3 and SPC4 (port MTU
// 9100, RDMA MTU 1024, small packets 50 %): 400G/300m xon 38912 xoff 272384
// size 320512; 100G/40m xon 19456 xoff 51200 size 70656; SPC4 800G/300m xon
// 38912 xoff 474112 size 522240; 200G/40m xon 19456 xoff 65536. Those
// predate PR 4757, which adds 2 KiB to each xoff here (each is more than
// 2 KiB short of its all-small-packet worst case), so xoff is the PR's value
// + 2048 and size follows. 400G and 800G are 8-lane ports (doubled pipeline
// latency, one more port MTU in size); Spectrum-4 adds speed/1000·120/8 bytes
// on tile.
func TestSONiCHeadroomMatchesPR3235(t *testing.T) {
	sp := func(gen uint8, cell uint32) SwitchBuffer {
		return SwitchBuffer{CellBytes: cell, PipelineLatencyKB: 19, MACPHYDelayKB: 0.8, LosslessMTU: 1024, SmallPacketPercent: 50, Generation: gen}
	}
	cases := []struct {
		name                string
		port                Port
		buf                 SwitchBuffer
		prXoff, xon, prSize uint32
		wantSizeWithCompens uint32
	}{
		{"SPC3 400G 300m", Port{SpeedMbps: 400000, CableMeters: 300, MTU: 9100, Lanes: 8}, sp(3, 144), 272384, 38912, 320512, 322560},
		{"SPC3 100G 40m", Port{SpeedMbps: 100000, CableMeters: 40, MTU: 9100}, sp(3, 144), 51200, 19456, 70656, 72704},
		{"SPC4 800G 300m", Port{SpeedMbps: 800000, CableMeters: 300, MTU: 9100, Lanes: 8}, sp(4, 192), 474112, 38912, 522240, 524288},
		{"SPC4 200G 40m", Port{SpeedMbps: 200000, CableMeters: 40, MTU: 9100}, sp(4, 192), 65536, 19456, 84992, 87040},
	}
	for _, c := range cases {
		got, err := SONiCHeadroom(c.port, c.buf)
		if err != nil {
			t.Fatal(err)
		}
		if got.Xoff != c.prXoff+smallPacketCompensation || got.Xon != c.xon || got.Size != c.wantSizeWithCompens {
			t.Errorf("%s: got %+v, want xoff %d+2048, xon %d, size %d (PR: %d)", c.name, got, c.prXoff, c.xon, c.wantSizeWithCompens, c.prSize)
		}
	}
}

// With a shared headroom pool SONiC reserves only xon per priority group and
// adds no small-packet compensation: 100G/5m xoff 43008 (above, before the
// 2 KiB), size = xon.
func TestSONiCHeadroomSharedPool(t *testing.T) {
	b := spectrum2(4096)
	b.SharedHeadroomPool = true
	got, err := SONiCHeadroom(Port{SpeedMbps: 100000, CableMeters: 5, MTU: 9100}, b)
	if err != nil {
		t.Fatal(err)
	}
	if got != (SwitchHeadroom{Xoff: 43008, Xon: 18432, Size: 18432}) {
		t.Errorf("shared pool: got %+v, want xoff 43008, size 18432 (xon only)", got)
	}
}

// Gearbox delay adds speed·delay/8192 bytes twice (lua: 2·bytes_on_gearbox):
// 100G, 700 ns: 100000·700/8192 = 8544.92 B; propagation 35766.51 + 17089.84 =
// 52856.36; ceil1024(4096 + 52856.36·1.061538 = 60205.06) = 60416, + 2048.
func TestSONiCHeadroomGearbox(t *testing.T) {
	b := spectrum2(4096)
	b.GearboxDelayNs = 700
	got, err := SONiCHeadroom(Port{SpeedMbps: 100000, CableMeters: 5, MTU: 9100}, b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Xoff != 62464 {
		t.Errorf("gearbox xoff = %d, want 62464", got.Xoff)
	}
}

// Spectrum-6 adds 18 KiB (PR 4797); with every packet small (100 %) the
// occupancy is the worst case, 3, and there is no compensation:
// ceil1024(4096 + 3·35766.51) = 111616.
func TestSONiCHeadroomGenerationAndSmallPackets(t *testing.T) {
	port := Port{SpeedMbps: 100000, CableMeters: 5, MTU: 9100}
	b := spectrum2(4096)
	b.Generation = 6
	if got, _ := SONiCHeadroom(port, b); got.Xoff != 43008+spectrum6Compensation+smallPacketCompensation {
		t.Errorf("Spectrum-6 xoff = %d, want 43008 + 18432 + 2048", got.Xoff)
	}
	b = spectrum2(4096)
	b.SmallPacketPercent = 100
	if got, _ := SONiCHeadroom(port, b); got.Xoff != 111616 {
		t.Errorf("all small packets: xoff = %d, want 111616", got.Xoff)
	}
}

func TestSONiCHeadroomUnknownSpeed(t *testing.T) {
	if _, err := SONiCHeadroom(Port{SpeedMbps: 12345, CableMeters: 5, MTU: 9100}, Default().SwitchBuffer); err == nil {
		t.Error("no error for a speed without pause quanta")
	}
}

// Physics bounds the model from below: after XOFF the port must take the
// frame the peer is sending (port MTU), a lossless packet, twice the cable
// delay's bytes and the peer's response; cell overhead only adds. Checked on
// the whole default table, so a wrong unit in any term shows.
func TestSONiCHeadroomAbovePhysics(t *testing.T) {
	for _, s := range TableSpeedsMbps() {
		for _, l := range TableCablesM() {
			port := Port{SpeedMbps: s, CableMeters: l, MTU: 9100}
			got, err := SONiCHeadroom(port, spectrum2(4096))
			if err != nil {
				t.Fatal(err)
			}
			q, _ := PauseQuanta(s)
			inflight := 9100 + 4096 + 2*float64(l)*float64(s)*1e6/speedOfLight/8 + float64(q)*64
			if float64(got.Xoff) < inflight || float64(got.Xoff) > 3*inflight+8192 {
				t.Errorf("%dG %dm: xoff %d outside [%.0f, 3×] bytes in flight", s/1000, l, got.Xoff, inflight)
			}
		}
	}
}

// Worked by hand from mlx5 en/port_buffer.c: xoff = (301 + 216·L/100)·speed/1000
// + 272·MTU/100 (integer division, speed in Mb/s floored at 40000), minimum
// lossless buffer xoff + MTU + cell (128).
func TestMLX5HeadroomWorked(t *testing.T) {
	cases := []struct {
		name                    string
		speed, cable, mtu       uint32
		wantXoff, wantMinBuffer uint32
	}{
		// 216·7/100 = 15; 316·100000/1000 = 31600; 272·1500/100 = 4080 → 35680; +1500+128.
		{"100G 7m (mlx5 default cable) MTU 1500", 100000, 7, 1500, 35680, 37308},
		// speed floored to 40000: 216·5/100 = 10; 311·40 = 12440; 272·9000/100 = 24480 → 36920.
		{"25G 5m MTU 9000 (speed floored at 40G)", 25000, 5, 9000, 36920, 46048},
		// 216·300/100 = 648; 949·400 = 379600; 272·9100/100 = 24752 → 404352.
		{"400G 300m MTU 9100", 400000, 300, 9100, 404352, 413580},
	}
	for _, c := range cases {
		got := MLX5Headroom(c.speed, c.cable, c.mtu, 128)
		if got.Xoff != c.wantXoff || got.MinBuffer != c.wantMinBuffer {
			t.Errorf("%s: got %+v, want xoff %d min buffer %d", c.name, got, c.wantXoff, c.wantMinBuffer)
		}
	}
}

// HPCC production settings (alibaba-edu/High-Precision-Congestion-Control
// issue #21): Kmin = 100 KB × bw/25G, Kmax = 400 KB × bw/25G, Pmax 0.2; the
// simulator multiplies its KB by 1000.
func TestScaleECNHPCC(t *testing.T) {
	e := ECN{ReferenceMbps: 25000, KminBytes: 100000, KmaxBytes: 400000, PmaxPercent: 20}
	cases := []struct {
		speed      uint32
		kmin, kmax uint64
	}{
		{10000, 40000, 160000},
		{25000, 100000, 400000},
		{40000, 160000, 640000},
		{100000, 400000, 1600000},
		{400000, 1600000, 6400000},
	}
	for _, c := range cases {
		got := ScaleECN(e, c.speed)
		if got.KminBytes != c.kmin || got.KmaxBytes != c.kmax || got.PmaxPercent != 20 {
			t.Errorf("%d Mb/s: got %+v, want Kmin %d Kmax %d Pmax 20", c.speed, got, c.kmin, c.kmax)
		}
	}
}

// Compute takes the larger model for xoff and the larger of switch and NIC
// reservations. With the default constants the NIC model wins at 100G/5m
// (55852 = (301+10)·100 + 24752 against the switch's 45056: headroom 18432 +
// 55852); with every packet small the switch model wins (111616, see
// above); at 10G/300m the NIC floors the speed to 40G ((301+648)·40 + 24752 =
// 62712 against the switch's 25600).
func TestComputeUsesLarger(t *testing.T) {
	p := Default()
	plan, err := PlanPort(p, Port{Name: "a", SpeedMbps: 100000, CableMeters: 5, MTU: 9100})
	if err != nil {
		t.Fatal(err)
	}
	if plan.NIC.Xoff != 55852 || plan.Switch.Xoff != 45056 || plan.XoffBytes != 55852 || plan.HeadroomBytes != 18432+55852 {
		t.Errorf("100G/5m: %+v", plan)
	}
	small := Default()
	small.SwitchBuffer.SmallPacketPercent = 100
	plan, err = PlanPort(small, Port{Name: "a", SpeedMbps: 100000, CableMeters: 5, MTU: 9100})
	if err != nil {
		t.Fatal(err)
	}
	if plan.XoffBytes != 111616 || plan.HeadroomBytes != 18432+111616 {
		t.Errorf("100G/5m, all small packets: %+v", plan)
	}
	plan, err = PlanPort(p, Port{Name: "b", SpeedMbps: 10000, CableMeters: 300, MTU: 9100})
	if err != nil {
		t.Fatal(err)
	}
	if plan.NIC.Xoff != 62712 || plan.Switch.Xoff != 25600 || plan.XoffBytes != 62712 || plan.HeadroomBytes != plan.Switch.Xon+62712 {
		t.Errorf("10G/300m: %+v", plan)
	}
	plan, err = PlanPort(p, Port{Name: "c", SpeedMbps: 100000, CableMeters: 5, MTU: 9100, HeadroomBytes: 200000})
	if err != nil {
		t.Fatal(err)
	}
	if plan.HeadroomBytes != 200000 {
		t.Errorf("override ignored: %+v", plan)
	}
}

func TestTableGrid(t *testing.T) {
	plans, err := Table(Default(), 9100, TableSpeedsMbps(), TableCablesM())
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 7*7 {
		t.Fatalf("%d rows, want 49", len(plans))
	}
	// Headroom grows with cable length at a fixed speed.
	for i := 1; i < len(plans); i++ {
		if plans[i].Port.SpeedMbps == plans[i-1].Port.SpeedMbps && plans[i].HeadroomBytes < plans[i-1].HeadroomBytes {
			t.Errorf("%s has less headroom than %s", plans[i].Port.Name, plans[i-1].Port.Name)
		}
	}
}
