package dnssd

import (
	"net"
	"slices"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

func testResponder(t *testing.T) *Responder {
	t.Helper()
	r, err := New(Config{Host: "inof-leaf1", Interfaces: []string{"lo"},
		Services: []Service{{Instance: "iNOF discovery leaf1", Type: TypeNVMeDiscTCP, Port: 8009, TXT: []string{"p=tcp"}}}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAnswerPTR: a browse (PTR for the service type) is answered with the
// instance, and its SRV, TXT and the interface's address as additionals; a
// question for another service is not answered.
func TestAnswerPTR(t *testing.T) {
	r := testResponder(t)
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skip("no loopback interface")
	}
	msg, ok := r.answer([]dnsmessage.Question{question("_nvme-disc._tcp.local.", dnsmessage.TypePTR)}, lo.Index, time.Minute)
	if !ok {
		t.Fatal("not answered")
	}
	var m dnsmessage.Message
	if err := m.Unpack(msg); err != nil {
		t.Fatal(err)
	}
	if len(m.Answers) != 1 || m.Answers[0].Body.(*dnsmessage.PTRResource).PTR.String() != "iNOF discovery leaf1._nvme-disc._tcp.local." {
		t.Fatalf("answers %+v", m.Answers)
	}
	var kinds []dnsmessage.Type
	for _, a := range m.Additionals {
		kinds = append(kinds, a.Header.Type)
		switch b := a.Body.(type) {
		case *dnsmessage.SRVResource:
			if b.Port != 8009 || b.Target.String() != "inof-leaf1.local." {
				t.Fatalf("SRV %+v", b)
			}
		case *dnsmessage.TXTResource:
			if !slices.Equal(b.TXT, []string{"p=tcp"}) {
				t.Fatalf("TXT %+v", b)
			}
		case *dnsmessage.AResource:
			if b.A != [4]byte{127, 0, 0, 1} {
				t.Fatalf("A %v", b.A)
			}
		}
	}
	if !slices.Contains(kinds, dnsmessage.TypeSRV) || !slices.Contains(kinds, dnsmessage.TypeTXT) || !slices.Contains(kinds, dnsmessage.TypeA) {
		t.Fatalf("additionals %v", kinds)
	}
	if _, ok := r.answer([]dnsmessage.Question{question("_http._tcp.local.", dnsmessage.TypePTR)}, lo.Index, time.Minute); ok {
		t.Fatal("answered for another service")
	}
}

// TestNewRefuses: names the codec cannot carry are refused.
func TestNewRefuses(t *testing.T) {
	for _, s := range []Service{{Instance: "a.b", Type: TypeNVMeDiscTCP}, {Instance: "x", Type: "nvme-disc._tcp"}, {Type: TypeNVMeDiscTCP}} {
		if _, err := New(Config{Host: "h", Interfaces: []string{"lo"}, Services: []Service{s}}); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
}

// FuzzAnswer: a packet a device on an access port sends is unpacked and
// answered without a panic, and every answer is a well-formed response.
func FuzzAnswer(f *testing.F) {
	for _, q := range []dnsmessage.Question{question("_nvme-disc._tcp.local.", dnsmessage.TypePTR),
		question("inof-leaf1.local.", dnsmessage.TypeA), question("_services._dns-sd._udp.local.", dnsmessage.TypeALL)} {
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{})
		_ = b.StartQuestions()
		_ = b.Question(q)
		msg, err := b.Finish()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(msg)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		r := testResponder(t)
		var m dnsmessage.Message
		if err := m.Unpack(pkt); err != nil || m.Header.Response || len(m.Questions) == 0 {
			return
		}
		msg, ok := r.answer(m.Questions, 1, time.Minute)
		if !ok {
			return
		}
		var a dnsmessage.Message
		if err := a.Unpack(msg); err != nil || !a.Header.Response || len(a.Answers) == 0 {
			t.Fatalf("answer to %+v: %+v, %v", m.Questions, a, err)
		}
	})
}
