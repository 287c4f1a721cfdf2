// Package dcbnl reads a Linux network device's IEEE DCB state (ETS, PFC, the
// APP table, APP trust and the DCB buffer map) over rtnetlink, RTM_GETDCB with
// DCB_CMD_IEEE_GET, as iproute2's `dcb` tool does. The codec (request encoding
// and reply decoding) is separate from the socket so it can be tested with
// constructed messages; Conn sends the request with mdlayher/netlink.
//
// Layouts follow include/uapi/linux/dcbnl.h. Structure fields are in host
// byte order, as the kernel writes them.
package dcbnl
