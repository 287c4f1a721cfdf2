package topo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// fakeNVMe is the nvme-cli every inof-host of a fabric runs (nvme.path).
// It appends each invocation's arguments as one line to $FAKE_NVME_DIR/calls
// and answers the four commands inof-host uses in nvme-cli 2.3's JSON:
// connect records a controller as one file under $FAKE_NVME_DIR/ctrl (named
// after its device, holding its path), list-subsys prints them, disconnect
// removes one, discover returns an empty discovery log.
const fakeNVMe = `#!/bin/sh
set -eu
state=${FAKE_NVME_DIR:?FAKE_NVME_DIR is not set}
mkdir -p "$state/ctrl"
printf '%s\n' "$*" >>"$state/calls"
op=$1
shift
tr= ta= ts= hw= sub= hq= dev=
while [ $# -gt 0 ]; do
	case $1 in
	-t) tr=$2; shift ;;
	-a) ta=$2; shift ;;
	-s) ts=$2; shift ;;
	-w) hw=$2; shift ;;
	-n) sub=$2; shift ;;
	-q) hq=$2; shift ;;
	-d) dev=$2; shift ;;
	esac
	shift
done
case $op in
connect)
	n=0
	while [ -e "$state/ctrl/nvme$n" ]; do n=$((n + 1)); done
	echo "$tr $ta $ts $hw $sub $hq" >"$state/ctrl/nvme$n"
	echo "{\"device\":\"nvme$n\"}"
	;;
list-subsys)
	sep=
	printf '['
	for f in "$state"/ctrl/nvme*; do
		[ -e "$f" ] || continue
		read -r ftr fta fts fhw fsub fhq <"$f"
		d=${f##*/}
		printf '%s{"HostNQN":"%s","Subsystems":[{"Name":"nvme-subsys%s","NQN":"%s","Paths":[{"Name":"%s","Transport":"%s","Address":"traddr=%s,trsvcid=%s,host_traddr=%s","State":"live"}]}]}' \
			"$sep" "$fhq" "${d#nvme}" "$fsub" "$d" "$ftr" "$fta" "$fts" "$fhw"
		sep=,
	done
	printf ']\n'
	;;
disconnect)
	if [ ! -e "$state/ctrl/$dev" ]; then
		echo "Failed to disconnect $dev: No such device" >&2
		exit 1
	fi
	rm -f "$state/ctrl/$dev"
	echo "NQN:$dev disconnected 1 controller(s)"
	;;
discover)
	echo '{"genctr":0,"records":[]}'
	;;
*)
	echo "fake nvme: $op is not faked" >&2
	exit 1
	;;
esac
`

// writeFakeNVMe writes the fake nvme-cli into dir and returns its path.
func writeFakeNVMe(dir string) (string, error) {
	p := filepath.Join(dir, "fake-nvme")
	return p, os.WriteFile(p, []byte(fakeNVMe), 0o755)
}

// NVMeCalls returns the argument lines of every fake nvme invocation of
// the device so far, oldest first.
func (r *readings) NVMeCalls() []string {
	n := r.n
	b, err := os.ReadFile(filepath.Join(n.dir, "nvme", "calls"))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// WaitNVMe waits until the device's fake nvme was called with arguments
// that start with prefix and returns that call.
func (r *readings) WaitNVMe(timeout time.Duration, prefix string) (string, error) {
	n := r.n
	var call string
	err := Poll(timeout, func() (bool, error) {
		calls := r.NVMeCalls()
		for _, c := range calls {
			if strings.HasPrefix(c, prefix) {
				call = c
				return true, nil
			}
		}
		return false, fmt.Errorf("calls so far: %q", calls)
	})
	if err != nil {
		return "", fmt.Errorf("topo: %s: no nvme %q: %w", n.Name, prefix, err)
	}
	return call, nil
}
