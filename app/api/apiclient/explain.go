package apiclient

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Unreachable explains a call's failure to reach the API at server: why
// the connection failed (no socket, permission denied on it, nothing
// listening, the server's certificate not trusted or not for this name,
// no TLS there), in words an admin acts on, naming the flag or variable
// that changes it. It returns "" for any other error, including an
// Unavailable status the server itself sent (a switch whose fabric view
// has not settled yet, a reflector missing history), whose message says
// what it is.
func Unreachable(err error, server string) string {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable {
		return ""
	}
	msg := st.Message()
	if !strings.Contains(msg, "connection error") && !strings.Contains(msg, "transport:") &&
		!strings.Contains(msg, "dial") && !strings.Contains(msg, "handshake") {
		return ""
	}
	where := server
	if IsUnix(server) {
		where = strings.TrimPrefix(strings.TrimPrefix(server, "unix://"), "unix:")
	}
	switch {
	case strings.Contains(msg, "permission denied"):
		return "permission denied on the socket " + where + ": inofd is running, but this user may not connect " +
			"(the socket is mode 0600, 0660 for the group api.socket_group: join that group or run as root)"
	case strings.Contains(msg, "no such file or directory"):
		return "no socket at " + where + ": inofd is not running, or serves its API elsewhere " +
			"(--server or INOF_SERVER; a switch serves one only with api_socket set)"
	case strings.Contains(msg, "connection refused") && IsUnix(server):
		return "nothing accepts connections on " + where + ": inofd is not running (the socket file is left over)"
	case strings.Contains(msg, "connection refused"):
		return "connection refused by " + where + ": inofd is not running there, or does not serve its API on that port " +
			"(--server or INOF_SERVER)"
	case strings.Contains(msg, "unknown authority"):
		return "the TLS certificate of " + where + " is signed by a CA inofctl does not trust: " +
			"give that CA with --ca-file (INOF_CA_FILE)"
	case strings.Contains(msg, "certificate is valid for") || strings.Contains(msg, "doesn't contain any IP SANs") ||
		strings.Contains(msg, "not valid for any names"):
		return "the TLS certificate of " + where + " is not for the name dialed: set the name it holds with " +
			"--server-name (INOF_SERVER_NAME) (" + lastCause(msg) + ")"
	case strings.Contains(msg, "first record does not look like a TLS handshake"):
		return where + " does not speak TLS: is it the API's address (--server)?"
	case strings.Contains(msg, "handshake") || strings.Contains(msg, "tls:") || strings.Contains(msg, "x509:"):
		return "the TLS handshake with " + where + " failed: " + lastCause(msg)
	case strings.Contains(msg, "no such host"):
		return "cannot resolve the host of " + where + " (--server or INOF_SERVER)"
	}
	return "cannot connect to " + where + ": " + lastCause(msg)
}

// lastCause is the innermost part of a gRPC transport message
// ("connection error: desc = \"transport: ...: dial unix x: connect: y\"").
func lastCause(msg string) string {
	msg = strings.Trim(msg, `"`)
	if i := strings.LastIndex(msg, "desc = "); i >= 0 {
		msg = strings.Trim(msg[i+len("desc = "):], `"`)
	}
	return strings.TrimPrefix(msg, "transport: ")
}
