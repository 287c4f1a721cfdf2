// Command benchreport is the last step of `make bench`: it merges the rows
// every benchmark program wrote to $BENCH_OUT (default bench-out/) with
// integration/bench/result, prints them as one table and writes them
// together as $BENCH_OUT/bench.json.
//
//	go run ./integration/bench/cmd/benchreport
package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/openinof/inof/integration/bench/result"
)

// merged is the file benchreport writes; it is skipped when merging.
const merged = "bench"

func main() {
	if err := run(result.Dir(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

// run merges dir's row files, prints the table to w (figures first, the
// machine rows last) and writes dir/bench.json. It fails when dir holds no rows at all; a file that
// cannot be read is reported after the table of the others.
func run(dir string, w io.Writer) error {
	rows, mergeErr := result.Merge(dir, merged+".json")
	if len(rows) == 0 {
		return errors.Join(fmt.Errorf("no benchmark rows in %s (did the benchmarks run with BENCH_OUT=%s?)", dir, dir), mergeErr)
	}
	// The machine's load rows of every program go last, together.
	slices.SortStableFunc(rows, func(a, b result.Row) int {
		return cmp.Compare(isMachine(a), isMachine(b))
	})
	if err := result.Table(w, rows); err != nil {
		return err
	}
	if err := result.Write(dir, merged, rows); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d rows written to %s\n", len(rows), filepath.Join(dir, merged+".json"))
	return mergeErr
}

// isMachine is 1 for the rows describing the machine, 0 for figures.
func isMachine(r result.Row) int {
	if r.Group == "machine" {
		return 1
	}
	return 0
}
