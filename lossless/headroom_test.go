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

// Worked by hand from the SONiC formula with the spec's Spectrum constants
// (cell 144 B SP2 / 96 B SP1, pipeline latency 18 KB, mac_phy_delay 0.8 KB,
// small packets 50 %, lossless MTU 1024, port MTU 9100); the arithmetic is in
// each case's comment and was checked independently of this code.
func TestSONiCHeadroomWorked(t *testing.T) {
	sp := func(cell uint32) SwitchBuffer {
		return SwitchBuffer{CellBytes: cell, PipelineLatencyKB: 18, MACPHYDelayKB: 0.8, LosslessMTU: 1024, SmallPacketPercent: 50}
	}
	cases := []struct {
		name                string
		speed, cable, mtu   uint32
		buf                 SwitchBuffer
		xoff, xon, wantSize uint32
	}{
		// wcf 144/64 = 2.25, occupancy 1.625; peer 394·64 = 25216;
		// cable 2·5·1e5·1e9/1.98e8/8192 = 616.52; propagation 9100+616.52+819.2+25216 = 35751.72;
		// xoff = ceil1024(1024 + 35751.72·1.625 = 59120.5) = 59392; xon 18432.
		{"SP2 100G 5m", 100000, 5, 9100, sp(144), 59392, 18432, 77824},
		// wcf 2·96/97 = 1.9794, occupancy 1.4897; peer 80·64 = 5120; cable 1233.03;
		// propagation 16272.23; xoff = ceil1024(1024 + 24240.6) = 25600.
		{"SP1 25G 40m", 25000, 40, 9100, sp(96), 25600, 18432, 44032},
		// peer 905·64 = 57920; cable 2·300·4e5·1e9/1.98e8/8192 = 147964.02;
		// propagation 215803.2; xoff = ceil1024(1024 + 350680.2) = 352256.
		{"SP2 400G 300m", 400000, 300, 9100, sp(144), 352256, 18432, 370688},
	}
	for _, c := range cases {
		got, err := SONiCHeadroom(c.speed, c.cable, c.mtu, c.buf)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != (SwitchHeadroom{Xoff: c.xoff, Xon: c.xon, Size: c.wantSize}) {
			t.Errorf("%s: got %+v, want xoff %d xon %d size %d", c.name, got, c.xoff, c.xon, c.wantSize)
		}
	}
}

// With a shared headroom pool SONiC reserves only xon per priority group.
func TestSONiCHeadroomSharedPool(t *testing.T) {
	b := SwitchBuffer{CellBytes: 144, PipelineLatencyKB: 18, MACPHYDelayKB: 0.8, LosslessMTU: 1024, SmallPacketPercent: 50, SharedHeadroomPool: true}
	got, err := SONiCHeadroom(100000, 5, 9100, b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Size != 18432 || got.Xoff != 59392 {
		t.Errorf("shared pool: got %+v, want size 18432 (xon only), xoff 59392", got)
	}
}

// Gearbox delay adds speed·delay/8192 bytes twice (lua: 2·bytes_on_gearbox).
// 100G, 700 ns: 100000·700/8192 = 8544.9 B; ×2 ×1.625 = 27770.9 more before
// rounding: ceil1024(59120.5 + 27770.9 = 86891.4) = 87040.
func TestSONiCHeadroomGearbox(t *testing.T) {
	b := SwitchBuffer{CellBytes: 144, PipelineLatencyKB: 18, MACPHYDelayKB: 0.8, LosslessMTU: 1024, SmallPacketPercent: 50, GearboxDelayNs: 700}
	got, err := SONiCHeadroom(100000, 5, 9100, b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Xoff != 87040 {
		t.Errorf("gearbox xoff = %d, want 87040", got.Xoff)
	}
}

func TestSONiCHeadroomUnknownSpeed(t *testing.T) {
	if _, err := SONiCHeadroom(12345, 5, 9100, Default().SwitchBuffer); err == nil {
		t.Error("no error for a speed without pause quanta")
	}
}

// Sanity check against a vendor number: the mlxsw driver commit
// edf777f55aee ("Update port headroom configuration") says Mellanox recommends
// 101.6 KB of headroom for a 100G port with a 100 m cable. The SONiC model on
// Spectrum-1 constants (port MTU 1500) must land within 25 % of it.
func TestSONiCHeadroomNearMellanoxRecommendation(t *testing.T) {
	b := SwitchBuffer{CellBytes: 96, PipelineLatencyKB: 18, MACPHYDelayKB: 0.8, LosslessMTU: 1500, SmallPacketPercent: 50}
	got, err := SONiCHeadroom(100000, 100, 1500, b)
	if err != nil {
		t.Fatal(err)
	}
	const recommended = 101600.0
	if r := float64(got.Size) / recommended; r < 0.75 || r > 1.25 {
		t.Errorf("100G/100m headroom %d B is %.0f %% of the recommended 101.6 KB", got.Size, r*100)
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
// reservations: at 100G/5m/9100 the switch model wins (62464 vs NIC 55852:
// (301+10)·100 + 24752); at 10G/300m the NIC model wins (floored to 40G:
// (301+648)·40 + 24752 = 62712 against the switch's 33792).
func TestComputeUsesLarger(t *testing.T) {
	p := Default()
	plan, err := PlanPort(p, Port{Name: "a", SpeedMbps: 100000, CableMeters: 5, MTU: 9100})
	if err != nil {
		t.Fatal(err)
	}
	if plan.NIC.Xoff != 55852 || plan.XoffBytes != plan.Switch.Xoff || plan.HeadroomBytes != plan.Switch.Xon+plan.Switch.Xoff {
		t.Errorf("100G/5m: %+v", plan)
	}
	plan, err = PlanPort(p, Port{Name: "b", SpeedMbps: 10000, CableMeters: 300, MTU: 9100})
	if err != nil {
		t.Fatal(err)
	}
	if plan.NIC.Xoff != 62712 || plan.XoffBytes != 62712 || plan.HeadroomBytes != plan.Switch.Xon+62712 {
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
