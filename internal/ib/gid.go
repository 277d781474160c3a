package ib

import "net/netip"

// GID is a 16-byte global identifier (union ibv_gid). For RoCEv2 a GID is an
// IP address: an IPv6 address as is, an IPv4 address a.b.c.d as the
// IPv4-mapped ::ffff:a.b.c.d (doc/protocol.md §1.3).
type GID [16]byte

// GIDFromAddr returns the RoCEv2 GID of an IP address: IPv4 addresses
// become IPv4-mapped, an IPv6 zone is dropped, and the zero Addr gives the
// zero GID.
func GIDFromAddr(a netip.Addr) GID { return GID(a.As16()) }

// Addr returns the IP address g stands for: an IPv4 address for an
// IPv4-mapped GID (rxe's test for IPv4, doc/protocol.md §1.3), an IPv6 address
// otherwise.
func (g GID) Addr() netip.Addr { return netip.AddrFrom16(g).Unmap() }

// String returns g in IPv6 text form as inet_ntop writes it, IPv4-mapped
// GIDs in mixed notation: "::ffff:10.77.0.2", "fe80::1". (For the
// deprecated IPv4-compatible ::a.b.c.d glibc's inet_ntop uses mixed
// notation too; this, like musl, writes hex.)
func (g GID) String() string { return netip.AddrFrom16(g).String() }

// IsZero reports whether g is all zeros, the unset GID.
func (g GID) IsZero() bool { return g == GID{} }
