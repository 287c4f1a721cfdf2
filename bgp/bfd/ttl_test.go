package bfd

import "golang.org/x/sys/unix"

func setTTL(fd uintptr, ttl int) { unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TTL, ttl) }
