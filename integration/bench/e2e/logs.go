package e2e

import (
	"regexp"
	"time"
)

// logTime finds re's first match in log and parses its first group as the
// time of a slog text handler line (time=RFC 3339).
func logTime(re *regexp.Regexp, log string) (time.Time, bool) {
	m := re.FindStringSubmatch(log)
	if len(m) < 2 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, m[1])
	return t, err == nil
}
