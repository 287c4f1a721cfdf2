package nvmeaddr

import "testing"

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Address
	}{
		{"traddr=10.0.0.100,trsvcid=4420,host_traddr=10.0.0.2,src_addr=10.0.0.2", Address{"10.0.0.100", "4420", "10.0.0.2"}},
		{"traddr=fd00::100,trsvcid=4420,host_traddr=fd00::2", Address{"fd00::100", "4420", "fd00::2"}},
		{"traddr=10.0.0.101 trsvcid=4420", Address{TrAddr: "10.0.0.101", TrSvcID: "4420"}}, // an older kernel
		{"traddr=10.0.0.1,trsvcid=4420\n", Address{TrAddr: "10.0.0.1", TrSvcID: "4420"}},   // as read from sysfs
		{"", Address{}},
		{"traddr,=x,trsvcid==4420,other=1", Address{TrSvcID: "=4420"}}, // malformed pairs: no panic, nothing invented
	} {
		if got := Parse(c.in); got != c.want {
			t.Errorf("Parse(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}
