// Package daemon holds what every inof daemon (inofd as switch or reflector,
// inof-host) shares: loading one options struct from a YAML file, INOF_*
// environment variables and command-line flags with every validation error
// listed at once; slog setup; the HTTP server for /metrics and /healthz; and
// the signal context that ends a daemon cleanly on SIGTERM or SIGINT.
//
// It knows nothing about any one daemon: each passes its own defaults and
// options struct.
package daemon
