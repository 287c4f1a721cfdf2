//go:build privileged

package e2e

import (
	"testing"

	"github.com/openinof/inof/integration/bench/result"
	"github.com/openinof/inof/integration/topo"
)

// singlePathHosts have one NIC (leaf1), so their path to the target's
// leaf1 address is their last: one host per failover.last_path policy.
var singlePathHosts = []failoverHost{
	{name: "hwait", iopolicy: "numa", single: true},
	{name: "hfast", iopolicy: "numa", single: true, lastPath: "fail-fast"},
	{name: "hkeep", iopolicy: "numa", single: true, lastPath: "keep"},
}

// BenchmarkPrivVMSinglePath: the target's leaf1 link is cut and restored
// (BENCH_TRIALS, else 5; 2 with -short) with three single-path hosts, one
// per last-path policy, on each guest kernel. Per policy: the time from
// the cut until the controller left live, where that time went, the read
// errors until the path was live again (fail-fast: I/O fails while no
// path is live; wait: it waits), and the link-back time. Rows of group
// "failover single path", with the machine's load.
func BenchmarkPrivVMSinglePath(b *testing.B) {
	topo.RequireVM(b)
	requireSwitchRole(b)
	n := trials(b, 5, 2)
	perKernel(b, "single path", "failover-single", func(b *testing.B, kernel string) []result.Row {
		ff := startFailFabric(b, kernel, singlePathHosts, false)
		o := ff.linkCut()
		o.allPaths = true
		return ff.run("failover single path", "single path", o, n)
	})
}
