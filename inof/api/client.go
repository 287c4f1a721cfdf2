package api

import (
	"google.golang.org/grpc"

	"github.com/openinof/inof/inof/api/apiclient"
)

// DialOptions say how a client reaches the API.
type DialOptions = apiclient.DialOptions

// IsUnix reports whether server names a unix socket.
func IsUnix(server string) bool { return apiclient.IsUnix(server) }

// Dial returns a client connection (connecting lazily, on the first call);
// see apiclient.Dial, which it calls.
func Dial(o DialOptions) (*grpc.ClientConn, error) { return apiclient.Dial(o) }
