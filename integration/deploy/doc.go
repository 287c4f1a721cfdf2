// Package deploy is a test suite for what an operator installs beside the
// binaries: the systemd units, the Prometheus alert rules and the Grafana
// dashboard under docs/deploy, and the Debian packages and container
// image that `make package` and `make image` build (internal/packaging).
// The unit and monitoring checks run Debian's systemd-analyze and
// promtool (packages systemd and prometheus); the package test installs
// the .debs in a clean Debian container.
package deploy
