package inof

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestValidateWireNQN(t *testing.T) {
	good := []string{
		"nqn.2014-08.org.example:array1",
		"nqn.2014-08.org.nvmexpress:uuid:0c2f8f8e-7b4d-4c53-9f6a-8f7c1f2d3e4a",
		"nqn.1992-08.com.netapp:sn.8f1c:subsystem.é",
		"t1", // devices send what they like; only the dangerous is refused
		strings.Repeat("n", MaxNQNLen),
	}
	for _, s := range good {
		if err := ValidateWireNQN(s); err != nil {
			t.Errorf("ValidateWireNQN(%q) = %v, want nil", s, err)
		}
	}
	bad := []string{
		"",
		strings.Repeat("n", MaxNQNLen+1),
		"nqn.2014-08.org.example:a\xff\xfe",
		"nqn.2014-08.org.example:a,nr_io_queues=1,queue_size=2",
		"nqn.2014-08.org.example:a=b",
		"nqn.2014-08.org.example:a b",
		"nqn.2014-08.org.example:a\nb",
		"nqn.2014-08.org.example:\x1b[2J\x1b[31mred",
		"nqn.2014-08.org.example:a\u202eb", // a bidi override
		"nqn.2014-08.org.example:a\\b",
		"nqn.2014-08.org.example:a\x00",
	}
	for _, s := range bad {
		err := ValidateWireNQN(s)
		if !errors.Is(err, ErrText) {
			t.Errorf("ValidateWireNQN(%q) = %v, want ErrText", s, err)
			continue
		}
		if !utf8.ValidString(err.Error()) || strings.ContainsAny(err.Error(), "\x1b\n\x00") {
			t.Errorf("error of %q is not safe to log: %q", s, err.Error())
		}
	}
}

func TestValidateWireText(t *testing.T) {
	if err := ValidateWireText("name", "host 1.example", 64); err != nil {
		t.Errorf("a name with a space: %v", err)
	}
	for _, s := range []string{"a\tb", "a\x1b]0;title\x07", "\xc3", strings.Repeat("x", 65)} {
		if err := ValidateWireText("name", s, 64); !errors.Is(err, ErrText) {
			t.Errorf("ValidateWireText(%q) = %v, want ErrText", s, err)
		}
	}
}

func TestQuoteTruncates(t *testing.T) {
	long := strings.Repeat("é", 1<<19) // 1 MiB
	q := Quote(long, 64)
	if len(q) > 4*64+32 || !strings.Contains(q, "(1048576 bytes)") || !utf8.ValidString(q) {
		t.Errorf("Quote of 1 MiB = %d bytes: %.100q", len(q), q)
	}
	if got := Truncate(long, 64); len(got) > 64+20 || !strings.HasSuffix(got, "(1048576 bytes)") || !utf8.ValidString(got) {
		t.Errorf("Truncate of 1 MiB = %q", got)
	}
	if got := Quote("a\x1bb", 64); got != `"a\x1bb"` {
		t.Errorf("Quote = %s", got)
	}
}

func TestPrintable(t *testing.T) {
	cases := map[string]string{
		"plain name":    "plain name",
		"a\x1b[31mred":  `a\x1b[31mred`,
		"bad\xffbyte":   `bad\xffbyte`,
		"rtl\u202eevil": `rtl\u202eevil`,
		`back\x1b`:      `back\\x1b`,
		"tab\there":     `tab\there`,
		"né":            "né",
	}
	for in, want := range cases {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"", "a\x1b[2J", "\xff", "\u202e", `\`, "nqn.2014-08.org.example:a,b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := Printable(s)
		if !utf8.ValidString(p) {
			t.Fatalf("Printable(%q) is not UTF-8", s)
		}
		for _, r := range p {
			if r != ' ' && !unicode.IsPrint(r) {
				t.Fatalf("Printable(%q) = %q holds %U", s, p, r)
			}
		}
		if ValidateWireNQN(s) == nil {
			if p != s {
				t.Fatalf("a valid NQN %q is changed by Printable: %q", s, p)
			}
			if strings.ContainsAny(s, ",= \n") || len(s) > MaxNQNLen {
				t.Fatalf("ValidateWireNQN accepted %q", s)
			}
		}
		if q := Quote(s, 16); !utf8.ValidString(q) || len(q) > 16*4+32 {
			t.Fatalf("Quote(%q) = %q", s, q)
		}
		if v := ValidUTF8(s); !utf8.ValidString(v) {
			t.Fatalf("ValidUTF8(%q) = %q", s, v)
		}
	})
}
