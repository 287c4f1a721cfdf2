// Package packaging builds what an operator installs: Debian packages of
// the three binaries (inofd with its two systemd units, inof-host with its
// unit, inofctl) with the example configurations as conffiles under
// /etc/inof, the system user inofd and manual pages generated from the
// command trees; and a container image of inofd. `make package` and
// `make image` run it (internal/packaging/mkpkg); integration/deploy installs the
// packages in a clean Debian container.
//
// The packages are put together here and sealed with dpkg-deb (Debian's
// own tool, in every Debian system) rather than with a packaging
// library: the layout is small and plain, and dpkg-deb is what checks it.
package packaging
