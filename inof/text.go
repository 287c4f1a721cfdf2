package inof

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrText is the error every text-field check of this file wraps: a string
// that came from a device (or from a record some other party decoded) and
// that the fabric refuses to keep, pass on or print.
var ErrText = errors.New("invalid text field")

// nqnSpecials are the bytes of an NQN that the Linux kernel's
// /dev/nvme-fabrics option parser (nvmf_parse_options: strsep on ",\n",
// then "key=value") or a shell-free argv consumer would read as structure:
// an NQN holding one of them could add options to a host's connect.
const nqnSpecials = ",=\\\"'"

// ValidateWireNQN checks an NQN that arrived from a device (an LLDP
// registration, a 0x88A7 notification, a discovery PDU or DIM entry) or in
// a record decoded from BGP: valid UTF-8, 1..MaxNQNLen bytes, printable,
// no blanks nor control characters, and none of the comma, '=', the
// backslash and the two quote marks.
// It is looser than ValidateNQN (no date code or domain is required: the
// field carries what devices send) and strict exactly where an NQN could
// change what a host does with it. Callers with an optional NQN check it
// only when non-empty. The error wraps ErrText and quotes a truncated
// form of s.
func ValidateWireNQN(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: empty NQN", ErrText)
	case len(s) > MaxNQNLen:
		return fmt.Errorf("%w: NQN %s of %d bytes, at most %d", ErrText, Quote(s, 64), len(s), MaxNQNLen)
	}
	if err := checkText(s, false); err != nil {
		return fmt.Errorf("%w: NQN %s: %s", ErrText, Quote(s, 64), err.Error())
	}
	if i := strings.IndexAny(s, nqnSpecials); i >= 0 {
		return fmt.Errorf("%w: NQN %s: %q at byte %d separates options in an NVMe-oF connect", ErrText, Quote(s, 64), s[i], i)
	}
	return nil
}

// ValidateWireText checks a free-text field from a device (a host name, an
// operating system version, a symbolic name, an interface name): valid
// UTF-8, at most max bytes, printable characters and spaces only (no
// control or format characters, which could rewrite a terminal or hide
// text). The error wraps ErrText and quotes a truncated form of s.
func ValidateWireText(field, s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%w: %s %s of %d bytes, at most %d", ErrText, field, Quote(s, 64), len(s), max)
	}
	if err := checkText(s, true); err != nil {
		return fmt.Errorf("%w: %s %s: %s", ErrText, field, Quote(s, 64), err.Error())
	}
	return nil
}

// checkText reports the first byte of s that is not valid UTF-8 or not a
// printable character (blanks other than ' ' never; ' ' if spaces).
func checkText(s string, spaces bool) error {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !validRuneAt(s, i):
			return fmt.Errorf("not UTF-8 at byte %d", i)
		case r == ' ' && spaces:
		case !unicode.IsPrint(r) || unicode.IsSpace(r):
			return fmt.Errorf("character %U at byte %d is not printable or is a blank", r, i)
		}
	}
	return nil
}

// validRuneAt reports whether the U+FFFD decoded at byte i of s is a real
// one (encoded as three bytes) rather than the marker of an invalid byte.
func validRuneAt(s string, i int) bool {
	_, n := utf8.DecodeRuneInString(s[i:])
	return n == 3
}

// Quote returns s quoted for a log line or an error: Go syntax (control
// characters, invalid UTF-8 and non-printable runes escaped), cut at max
// bytes of s with the full length appended, so a hostile input costs at
// most about 4×max bytes of log.
func Quote(s string, max int) string {
	if len(s) <= max {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:cutAt(s, max)]) + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// Truncate returns s cut at max bytes (at a rune start) with "…(N bytes)"
// appended, s itself if it is not longer: for a slog attribute, which the
// handler quotes itself.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return s[:cutAt(s, max)] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

func cutAt(s string, max int) int {
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return cut
}

// Printable returns s with what must not reach a terminal escaped: invalid
// UTF-8 bytes as \xNN, control and other non-printable runes (ESC, CSI,
// bidirectional overrides, ...) as \u{...}-like Go escapes, and '\' as
// "\\" so an escape cannot be forged; s itself when there is nothing to
// escape. Spaces stay as they are. The result is valid UTF-8.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == '\\' || r == utf8.RuneError || (r != ' ' && !unicode.IsPrint(r)) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == ' ' || unicode.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r) // 'x' form with the escape inside
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// ValidUTF8 returns s with every invalid UTF-8 sequence replaced by
// U+FFFD (s itself when it is valid): for text a protocol such as gRPC
// refuses unless it is UTF-8.
func ValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
