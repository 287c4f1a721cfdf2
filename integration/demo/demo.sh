#!/usr/bin/env bash
# `make demo` (docs/testing.md): builds the daemons and the demo's test
# binary with a line of progress, then runs TestDemo's binary, which prints
# the story, and nothing of the test framework after it. Run as root from
# the module's root; GO names the go command.
set -euo pipefail
GO=${GO:-go}
cd "$(dirname "$0")/../.."
work=$(mktemp -d "${TMPDIR:-/tmp}/inof-demo-XXXXXX")
trap 'rm -rf "$work"' EXIT

# progress reads `go build -v` (the import path of each package as it is
# compiled): on a terminal it keeps one line up to date, and it ends with
# one line saying what was built. Any other line (a compile error) goes to
# stderr as it is.
progress() {
	local what=$1 n=0 pkg
	while IFS= read -r pkg; do
		case $pkg in
		*' '* | '#'* | *.go:*)
			printf '%s\n' "$pkg" >&2
			continue
			;;
		esac
		n=$((n + 1))
		if [ -t 1 ]; then
			printf '\r\033[K  %s: %d package(s) compiled, now %s' "$what" "$n" "$pkg"
		fi
	done
	if [ -t 1 ]; then
		printf '\r\033[K'
	fi
	if [ "$n" -eq 0 ]; then
		echo "  $what: up to date"
	else
		echo "  $what: built ($n package(s) compiled)"
	fi
}

echo "Building the demo: inofd, inof-host and inofctl, then the demo's test binary."
echo "(A first build compiles about 500 packages, the standard library included: minutes on a"
echo "busy machine; later builds are cached.)"
for b in inofd inof-host inofctl; do
	"$GO" build -v -o "$work/$b" "./cmd/$b" 2>&1 | progress "$b"
done
# The harness the demo's test binary links (integration/topo and what it
# imports), compiled here with progress so that `go test -c` only links.
mapfile -t deps < <("$GO" list -tags privileged -deps -test \
	-f '{{if and (not .Standard) (not .ForTest) .GoFiles}}{{.ImportPath}}{{end}}' ./integration/demo | grep -v '\.test$')
"$GO" build -v -tags privileged "${deps[@]}" 2>&1 | progress "demo harness"
"$GO" test -c -tags privileged -o "$work/demo.test" ./integration/demo
echo "  demo test binary: linked"
echo

# Run from the package's directory, as `go test` would. Without -test.v the
# binary prints the story and, at the end, one "PASS" line, left out here
# (a failure prints FAIL and the test's log, kept).
cd integration/demo
INOF_DEMO=1 INOF_TOPO_BIN="$work" "$work/demo.test" -test.run '^TestDemo$' -test.count 1 -test.timeout 5m |
	sed -u '/^PASS$/d'
