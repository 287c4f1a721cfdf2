package lossless

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestYAMLRoundTrip(t *testing.T) {
	p := Default()
	p.Ports[0].Interfaces = []string{"ens1f0", "ens1f1"}
	p.HostDSCPToPriority = map[uint8]uint8{24: 3, 48: 6}
	out, err := p.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseYAML(out)
	if err != nil {
		t.Fatalf("parse own output: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(back, p) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v", back, p)
	}
}

func TestParseYAMLRejectsUnknownField(t *testing.T) {
	out, err := Default().YAML()
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(out), "lossless_priorities:", "lossless_prioritys:", 1)
	if _, err := ParseYAML([]byte(bad)); err == nil {
		t.Error("a misspelt key was accepted")
	}
}

func TestParseYAMLPartial(t *testing.T) {
	p, err := ParseYAML([]byte("name: lab\nlossless_priorities: [3, 4]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "lab" || !reflect.DeepEqual(p.LosslessPriorities, []uint8{3, 4}) {
		t.Errorf("got %+v", p)
	}
}

func TestEncodeDefaultFitsRecord(t *testing.T) {
	enc, err := Encode(Default())
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) > MaxEncodedSize {
		t.Fatalf("default profile encodes to %d bytes", len(enc))
	}
	if strings.Count(strings.TrimSpace(string(enc)), "\n") != 0 {
		t.Errorf("encoding is not one line:\n%s", enc)
	}
	t.Logf("default profile: %d bytes encoded", len(enc))
	back, err := Decode(enc)
	if err != nil {
		t.Fatalf("decode: %v\n%s", err, enc)
	}
	if !reflect.DeepEqual(back, Default()) {
		t.Errorf("decode differs:\n got %+v\nwant %+v", back, Default())
	}
}

func TestEncodeRefusesOversize(t *testing.T) {
	p := Default()
	for i := range 400 {
		p.Ports[0].Interfaces = append(p.Ports[0].Interfaces, fmt.Sprintf("Ethernet%d", i))
	}
	if _, err := Encode(p); err == nil {
		t.Error("an oversize profile was encoded")
	}
	if _, err := Decode(make([]byte, MaxEncodedSize+1)); err == nil {
		t.Error("an oversize payload was decoded")
	}
}

// testdata/default.yaml is the default profile as operators see it.
func TestDefaultYAMLGolden(t *testing.T) {
	got, err := Default().YAML()
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, filepath.Join("testdata", "default.yaml"), got)
}

func FuzzDecode(f *testing.F) {
	enc, err := Encode(Default())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(enc)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode(data)
		if err != nil {
			return
		}
		_ = p.Validate() // must not panic on any decoded profile
		if p.Validate() == nil {
			if _, err := Compute(p); err != nil {
				t.Fatalf("valid profile does not compute: %v", err)
			}
		}
	})
}
