package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openinof/inof/integration/vm/internal/ctlproto"
)

// TestNotifiedAt: the notification is placed at the earliest of the
// daemons' lines written after the offsets: a host agent's failover line
// gives its arrival (time - done + acted - notified_to_acted), the other
// lines their own time; lines before the offset and active notifies do
// not count, and no line at all is an error.
func TestNotifiedAt(t *testing.T) {
	dir := t.TempDir()
	host, sw := filepath.Join(dir, "host.log"), filepath.Join(dir, "leaf.log")
	old := "time=2026-12-06T09:00:00.000Z level=INFO msg=notify port=swp1 host=h target=t state=inactive reason=link-down\n"
	if err := os.WriteFile(sw, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(host, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	from := []int64{fileSize(host), fileSize(sw)}
	if _, err := notifiedAt([]string{host, sw}, from); err == nil {
		t.Fatal("no line since the offsets: want an error")
	}
	add := func(file, line string) {
		f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		f.WriteString(line + "\n")
	}
	add(sw, `time=2026-12-06T10:00:00.100Z level=INFO msg=notify port=swp1 host=h target=t state=active reason=none`)
	add(host, `time=2026-12-06T10:00:00.200Z level=INFO msg="path failed over" path="tcp:t:4420 from h" reason=bfd-down `+
		`device=nvme0 live_sibling=true method=both notified_to_acted=30ms acted=25ms view=25ms done=70ms`)
	at, err := notifiedAt([]string{host, sw}, from)
	if err != nil {
		t.Fatal(err)
	}
	// 200 ms - 70 + 25 - 30 = 125 ms.
	if want := time.Date(2026, 12, 6, 10, 0, 0, 125e6, time.UTC); !at.Equal(want) {
		t.Fatalf("failover line: %v, want %v", at, want)
	}
	add(sw, `time=2026-12-06T10:00:00.120Z level=INFO msg=notify port=swp1 host=h target=t state=inactive reason=bfd-down`)
	if at, err = notifiedAt([]string{host, sw}, from); err != nil || !at.Equal(time.Date(2026, 12, 6, 10, 0, 0, 120e6, time.UTC)) {
		t.Fatalf("with the switch's notify: %v, %v; want 10:00:00.120", at, err)
	}
	add(host, `time=2026-12-06T10:00:00.300Z level=INFO msg="target inactive; disconnect after the restrain time" reason=zone-change`)
	if at, _ = notifiedAt([]string{host, sw}, from); !at.Equal(time.Date(2026, 12, 6, 10, 0, 0, 120e6, time.UTC)) {
		t.Fatalf("a later line moved it: %v", at)
	}
	add(host, `time=2026-12-06T10:00:00.300Z level=INFO msg="path failed over" done=bad`)
	if _, err := notifiedAt([]string{host, sw}, from); err != nil {
		t.Fatalf("only the first failover line counts: %v", err)
	}
}

// TestStallFrom: a gap that began before the notification counts from it,
// gaps that ended before it not at all, and with none past it the record
// length is the bound.
func TestStallFrom(t *testing.T) {
	at := time.Unix(100, 0)
	ns := func(ms int64) int64 { return at.UnixNano() + ms*int64(time.Millisecond) }
	st := ctlproto.StallReport{Gaps: []ctlproto.Gap{
		{StartNS: ns(-300), EndNS: ns(-1)}, // before: ignored
		{StartNS: ns(-50), EndNS: ns(8)},   // straddles: 8 ms
		{StartNS: ns(20), EndNS: ns(26)},   // 6 ms
	}}
	if got := stallFrom(st, at, 2*time.Millisecond); got != 8*time.Millisecond {
		t.Fatalf("stallFrom = %v, want 8ms", got)
	}
	if got := stallFrom(ctlproto.StallReport{Gaps: st.Gaps[:1]}, at, 2*time.Millisecond); got != 2*time.Millisecond {
		t.Fatalf("no gap past it: %v, want the record length 2ms", got)
	}
}

// TestLogFields: quoted values are unquoted, bare ones end at a blank.
func TestLogFields(t *testing.T) {
	kv := logFields(`time=2026-12-06T10:00:00.1Z msg="path failed over" path="a b" done=1.5ms`)
	if kv["time"] != "2026-12-06T10:00:00.1Z" || kv["msg"] != "path failed over" || kv["path"] != "a b" || kv["done"] != "1.5ms" {
		t.Fatalf("%q", kv)
	}
}
