// Package cmd is the home of the binaries: inofd (route reflector or switch
// agent), inofctl (admin CLI over gRPC) and inof-host (host and storage
// agent). Each lives in its own sub-directory as a main package.
package cmd
