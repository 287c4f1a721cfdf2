// Package readback reads what a Linux host has actually configured for
// lossless RoCE — IEEE DCB state over rtnetlink (package dcbnl) and the mlx5
// ECN/DCQCN sysfs files — and lists how it differs from a lossless profile.
package readback
