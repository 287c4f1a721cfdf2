package inof

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNQNLen is the longest NVMe Qualified Name, in bytes (NVMe base
// specification, "NVMe Qualified Names").
const MaxNQNLen = 223

// DiscoveryNQN is the well-known NQN of discovery controllers.
const DiscoveryNQN = "nqn.2014-08.org.nvmexpress.discovery"

// uuidNQNPrefix starts an NQN of the UUID form.
const uuidNQNPrefix = "nqn.2014-08.org.nvmexpress:uuid:"

// ValidateNQN checks the two NQN formats of the NVMe base specification:
// "nqn.yyyy-mm.reverse.domain:anything" (a date code, a reverse domain name
// of the naming authority, a colon and a string it assigns) and the UUID
// form "nqn.2014-08.org.nvmexpress:uuid:" followed by a UUID in 8-4-4-4-12
// hexadecimal digits; the well-known discovery NQN is accepted too. An NQN
// is UTF-8, at most MaxNQNLen bytes, printable and without blanks. The
// error says what is wrong.
func ValidateNQN(s string) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("NQN %q: %s", s, fmt.Sprintf(format, a...))
	}
	switch {
	case len(s) > MaxNQNLen:
		return bad("%d bytes, at most %d", len(s), MaxNQNLen)
	case !utf8.ValidString(s):
		return bad("not UTF-8")
	case strings.HasPrefix(strings.ToLower(s), "iqn."):
		return bad("an iSCSI name (iqn.…), not an NVMe one (nqn.yyyy-mm.reverse.domain:name)")
	case !strings.HasPrefix(s, "nqn.") && strings.HasPrefix(strings.ToLower(s), "nqn."):
		return bad("NQNs start with lower-case \"nqn.\"")
	case !strings.HasPrefix(s, "nqn."):
		return bad("must start with \"nqn.\"")
	}
	for i, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return bad("character %U at byte %d is not printable or is a blank", r, i)
		}
	}
	if s == DiscoveryNQN {
		return nil
	}
	if strings.HasPrefix(s, uuidNQNPrefix) {
		if !isUUID(s[len(uuidNQNPrefix):]) {
			return bad("the UUID form needs a UUID after %q (8-4-4-4-12 hex digits)", uuidNQNPrefix)
		}
		return nil
	}
	rest := s[len("nqn."):]
	if len(rest) < 8 || !isDateCode(rest[:7]) || rest[7] != '.' {
		return bad("want \"nqn.yyyy-mm.\" with a date code (e.g. nqn.2014-08.org.example:array1)")
	}
	domain, name, ok := strings.Cut(rest[8:], ":")
	if !ok || name == "" {
		return bad("want the naming authority's reverse domain, a colon and a name (nqn.%s.com.example:array1)", rest[:7])
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return bad("%q is not a reverse domain name (e.g. com.example)", domain)
	}
	for _, l := range labels {
		if !isLabel(l) {
			return bad("%q is not a reverse domain name (label %q)", domain, l)
		}
	}
	return nil
}

func isDateCode(s string) bool {
	if len(s) != 7 || s[4] != '-' {
		return false
	}
	for i, c := range []byte(s) {
		if i != 4 && (c < '0' || c > '9') {
			return false
		}
	}
	month := (s[5]-'0')*10 + s[6] - '0'
	return month >= 1 && month <= 12 && s[:4] >= "1970"
}

func isLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for _, c := range []byte(l) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range []byte(s) {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
