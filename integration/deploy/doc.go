// Package deploy is a test suite for what an operator installs beside the
// binaries: the systemd units, the Prometheus alert rules and the Grafana
// dashboard under docs/deploy, and the Debian packages, the container
// image and its SONiC application extension that `make package`, `make
// image` and `make sonic-image` build (internal/packaging).
// The unit and monitoring checks run Debian's systemd-analyze and
// promtool (packages systemd and prometheus); the package test installs
// the .debs in a clean Debian container; the SONiC test runs the image on
// the host network of a Docker daemon inside a switch's namespace.
package deploy
