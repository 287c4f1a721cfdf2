//go:build privileged

package linuxstats

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openinof/inof/internal/netns"
)

// BenchmarkPrivRead1000Links reads, in a namespace of 1,000 links (500
// veth pairs), all of them and 40 (the switch agent polls only the ports
// that carry a device) per op: the netlink statistics for the error
// counters; veth has no pause counters (on mlxsw two ethtool ioctls per
// port come on top).
func BenchmarkPrivRead1000Links(b *testing.B) {
	ns := netns.New(b, "phb")
	const n = 1000
	var batch strings.Builder
	ports := make([]string, n)
	for i := 0; i < n; i += 2 {
		ports[i], ports[i+1] = fmt.Sprintf("va%d", i), fmt.Sprintf("vb%d", i)
		fmt.Fprintf(&batch, "link add %s type veth peer name %s\n", ports[i], ports[i+1])
	}
	file := filepath.Join(b.TempDir(), "batch")
	if err := os.WriteFile(file, []byte(batch.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	ns.MustIP("-batch", file)
	var src *Source
	if err := ns.Do(func() (err error) { src, err = Open(Options{}); return err }); err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	ctx := context.Background()
	for _, watched := range []int{n, 40} {
		b.Run(fmt.Sprintf("watched=%d", watched), func(b *testing.B) {
			read := make([]string, watched)
			for i := range read {
				read[i] = ports[i*n/watched]
			}
			if got, err := src.Read(ctx, read); err != nil || got[watched-1].Err != nil {
				b.Fatalf("warm-up: %v %+v", err, got[watched-1])
			}
			for b.Loop() {
				if _, err := src.Read(ctx, read); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
