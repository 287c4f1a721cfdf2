package inof

import (
	"strings"
	"testing"
)

func TestValidateNQN(t *testing.T) {
	good := []string{
		"nqn.2014-08.org.example:array1",
		"nqn.2014-08.org.example:nvme:array1",
		"nqn.2024-01.io.example:t1",
		"nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6",
		DiscoveryNQN,
		"nqn.2014-08.com.example:" + strings.Repeat("a", MaxNQNLen-len("nqn.2014-08.com.example:")),
	}
	for _, s := range good {
		if err := ValidateNQN(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	bad := map[string]string{
		"nqn.":                              "date code",
		"nqn.bogus":                         "date code",
		"nqn.2014-13.org.example:a":         "date code",
		"nqn.2014-08.org.example":           "colon",
		"nqn.2014-08.example:a":             "reverse domain",
		"nqn.2014-08.org..example:a":        "reverse domain",
		"nqn.2014-08.org.example:a\x07b":    "printable",
		"nqn.2014-08.org.example:a b":       "blank",
		"NQN.2014-08.org.example:a":         "lower-case",
		"iqn.2001-04.com.example:storage":   "iSCSI",
		"nqn.2014-08.org.nvmexpress:uuid:1": "UUID",
		"eui.0123":                          "must start",
		"nqn.2014-08.com.example:" + strings.Repeat("a", MaxNQNLen): "at most",
		"nqn.2014-08.org.example:\xff":                              "UTF-8",
	}
	for s, want := range bad {
		err := ValidateNQN(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", s, err, want)
		}
	}
}
