// Package clab is a harness library: it renders an iNOF fabric as a
// containerlab lab (issue #12): the same topo.Spec that integration/topo
// brings up in network namespaces becomes a topology file of `kind: linux`
// nodes running our static binaries in a locally built image (BuildImage),
// so the two never drift.
//
// Layout, as in the namespace harness: a "fabric" node holds a bridge that
// every reflector's and switch's fab0 joins (control addresses
// 10.0.0.0/24); each device NIC is a veth link straight to an access port
// of its switch (p1, p2, …); inside a device container NIC k is eth(k+1),
// because containerlab keeps eth0 for its management network. Every node
// mounts its generated files (start.sh and its configuration) at /etc/inof
// and runs start.sh, which waits for its links, sets its addresses, then
// waits for /run/inof/start before it execs the daemon, so its output is
// the container's log. containerlab creates that file in the node's
// configure stage; a device's configure stage waits until its switches
// are healthy (their /healthz answers), so a host's first registration is
// never sent to a switch that does not listen yet. Passive nodes of the
// Spec are left waiting: `docker exec CONTAINER touch /run/inof/start`
// starts them.
//
// inof-demo.clab.yml (and the inof-demo/ directory beside it) is Render of
// LabSpec (topo.DemoSpec with slower BFD), checked in for users to deploy by hand
// (docs/containerlab.md); a unit test fails when it is stale, and
// `go test ./integration/clab -run TestDemoLabFile -update` rewrites it.
// TestPrivClabLab deploys it with containerlab on Docker and runs the
// discovery, zone isolation and link-cut scenarios inside the containers.
package clab
