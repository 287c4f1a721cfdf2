package zones

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestParseMember(t *testing.T) {
	good := map[string]Member{
		"10.0.0.5":                       {Kind: MemberAddr, Addr: netip.MustParseAddr("10.0.0.5")},
		" fd00::5 ":                      {Kind: MemberAddr, Addr: netip.MustParseAddr("fd00::5")},
		"10.0.0.10-10.0.0.20":            {Kind: MemberRange, Addr: netip.MustParseAddr("10.0.0.10"), Hi: netip.MustParseAddr("10.0.0.20")},
		"fd00::1-fd00::9":                {Kind: MemberRange, Addr: netip.MustParseAddr("fd00::1"), Hi: netip.MustParseAddr("fd00::9")},
		"10.0.1.0/24":                    {Kind: MemberPrefix, Prefix: netip.MustParsePrefix("10.0.1.0/24")},
		"nqn.2014-08.org.example:array1": {Kind: MemberNQN, Name: "nqn.2014-08.org.example:array1"},
		"alias:rack-1":                   {Kind: MemberAlias, Name: "rack-1"},
	}
	for in, want := range good {
		got, err := ParseMember(in)
		if err != nil || got != want {
			t.Errorf("ParseMember(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if again, err := ParseMember(got.String()); err != nil || again != got {
			t.Errorf("String round trip of %q: %q -> %+v, %v", in, got.String(), again, err)
		}
	}
	bad := []string{"", "10.0.0.300", "10.0.1.1/24", "10.0.0.9-10.0.0.1", "10.0.0.1-fd00::1", "0.0.0.0",
		"224.0.0.1", "nqn.with space", "nqn." + strings.Repeat("x", 230), "alias:", "alias:bad name", "host1"}
	for _, in := range bad {
		if m, err := ParseMember(in); err == nil {
			t.Errorf("ParseMember(%q) = %+v, want error", in, m)
		}
	}
}

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"z", "Zone_1", "rack-2.a", strings.Repeat("a", 63), "1st"} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("a", 64), "_x", "a b", "a/b", "é"} {
		if err := ValidateName(bad); !errors.Is(err, ErrName) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	m := MustParseMember
	cases := []struct {
		name string
		edit func(c *Config)
		want error
	}{
		{"unknown alias", func(c *Config) { c.Zones["z"] = &Zone{Name: "z", Members: []Member{m("alias:nope")}} }, ErrUnknown},
		{"duplicate member", func(c *Config) { c.Zones["z"] = &Zone{Name: "z", Members: []Member{m("10.0.0.1"), m("10.0.0.1")}} }, ErrDuplicate},
		{"overlap", func(c *Config) {
			c.Zones["z"] = &Zone{Name: "z", Members: []Member{m("10.0.0.0/24"), m("10.0.0.7")}}
		}, ErrOverlap},
		{"range overlap", func(c *Config) {
			c.Aliases["a"] = &Alias{Name: "a", Members: []Member{m("10.0.0.1-10.0.0.9"), m("10.0.0.9-10.0.0.20")}}
		}, ErrOverlap},
		{"reserved", func(c *Config) { c.Zones["default"] = &Zone{Name: "default"} }, ErrReserved},
		{"nested alias", func(c *Config) {
			c.Aliases["a"] = &Alias{Name: "a", Members: []Member{m("alias:b")}}
			c.Aliases["b"] = &Alias{Name: "b"}
		}, ErrAliasNested},
		{"alias named like zone", func(c *Config) {
			c.Aliases["z"] = &Alias{Name: "z"}
			c.Zones["z"] = &Zone{Name: "z"}
		}, ErrDuplicate},
		{"long name", func(c *Config) { n := strings.Repeat("z", 64); c.Zones[n] = &Zone{Name: n} }, ErrName},
		{"too many members", func(c *Config) { c.Zones["big"] = &Zone{Name: "big", Members: ipv4Members(MaxMembers + 1)} }, ErrMember},
	}
	for _, c := range cases {
		cfg := NewConfig(DefaultSettings())
		c.edit(cfg)
		if err := cfg.Validate(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	ok := NewConfig(DefaultSettings())
	ok.Aliases["rack1"] = &Alias{Name: "rack1", Members: []Member{m("10.0.1.0/24"), m("10.0.2.1")}}
	ok.Zones["z1"] = &Zone{Name: "z1", Members: []Member{m("alias:rack1"), m("10.0.1.5"), m("nqn.2014-08.org.example:a")}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err) // 10.0.1.5 overlaps only through the alias: allowed
	}
}
