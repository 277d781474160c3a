package wire

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"
)

// refICRC is the ICRC written straight from its definition (IBA Annex
// A17.3.3; doc/protocol.md §4): the whole masked pseudo-packet laid out in one
// buffer, the 8-byte pseudo-LRH, the IP header, the UDP header and the
// transport packet with the BTH's FECN/BECN/resv6 byte set to ones, then the
// bitwise CRC-32 of crc_ref_test.go. It shares no code with ICRC.
func refICRC(e *Envelope, b []byte) uint32 {
	udpLen := 8 + len(b) + 4
	out := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	src, dst := e.Src.As16(), e.Dst.As16()
	be16 := func(v int) []byte { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
	if e.Src.Unmap().Is4() {
		out = append(out, 0x45, 0xff) // version, IHL, TOS masked
		out = append(out, be16(20+udpLen)...)
		out = append(out, be16(int(e.IPID))...)
		out = append(out, be16(int(e.FlagsFragment))...)
		out = append(out, 0xff, 17, 0xff, 0xff) // TTL masked, UDP, checksum masked
		out = append(out, src[12:]...)
		out = append(out, dst[12:]...)
	} else {
		out = append(out, 0x6f, 0xff, 0xff, 0xff) // version, class and flow label masked
		out = append(out, be16(udpLen)...)
		out = append(out, 17, 0xff) // next header UDP, hop limit masked
		out = append(out, src[:]...)
		out = append(out, dst[:]...)
	}
	out = append(out, be16(int(e.SrcPort))...)
	out = append(out, be16(int(e.DstPort))...)
	out = append(out, be16(udpLen)...)
	out = append(out, 0xff, 0xff) // UDP checksum masked
	start := len(out)
	out = append(out, b...)
	if len(b) > 4 {
		out[start+4] = 0xff
	}
	return crcIEEE(out)
}

// randomEnvelope draws an IPv4, IPv4-mapped or IPv6 envelope with every
// covered field random.
func randomEnvelope(r *rand.Rand) Envelope {
	var a, b [16]byte
	for i := range a {
		a[i], b[i] = byte(r.Uint32()), byte(r.Uint32())
	}
	e := Envelope{
		IPID: uint16(r.Uint32()), FlagsFragment: uint16(r.Uint32()),
		SrcPort: uint16(r.Uint32()), DstPort: uint16(r.Uint32()),
	}
	switch r.IntN(3) {
	case 0:
		e.Src, e.Dst = netip.AddrFrom4([4]byte(a[:4])), netip.AddrFrom4([4]byte(b[:4]))
	case 1:
		e.Src = netip.AddrFrom16(netip.AddrFrom4([4]byte(a[:4])).As16())
		e.Dst = netip.AddrFrom4([4]byte(b[:4]))
	default:
		a[0], b[0] = 0xfd, 0xfd // not IPv4-mapped
		e.Src, e.Dst = netip.AddrFrom16(a), netip.AddrFrom16(b)
	}
	return e
}

// checkICRCPaths compares ICRC, and a packet sealed through StartICRC with
// the payload written in pieces cut at split, with the reference. b is a
// transport packet without trailer.
//
// Each path runs on e as given, and on e prepared (Envelope.Prepare)
// before its IPID changes and after it, so that the precomputed register
// of the headers is checked with every length and ID.
func checkICRCPaths(t *testing.T, e *Envelope, b []byte, split int) {
	t.Helper()
	prepared := *e
	id := prepared.IPID
	prepared.IPID = ^id
	prepared.Prepare()
	prepared.IPID = id
	if !prepared.prefix.ok {
		t.Fatal("Prepare left the envelope unprepared")
	}
	checkICRCPathsOf(t, e, b, split)
	checkICRCPathsOf(t, &prepared, b, split)
}

func checkICRCPathsOf(t *testing.T, e *Envelope, b []byte, split int) {
	t.Helper()
	want := refICRC(e, b)
	if got := ICRC(e, b); got != want {
		t.Fatalf("%v → %v, %d bytes, prepared %v: ICRC %#08x, reference %#08x", e.Src, e.Dst, len(b), e.prefix.ok, got, want)
	}
	p := Packet(append(b[:len(b):len(b)], 0, 0, 0, 0))
	if p.Validate() != nil {
		return
	}
	payload := p.Payload()
	s := p.StartICRC(e)
	for rest := payload; len(rest) > 0; {
		n := min(len(rest), max(split, 1))
		s.Write(rest[:n])
		rest = rest[n:]
	}
	p.SealICRCState(s)
	if got := p.ICRC(); got != want {
		t.Fatalf("%v → %v, %d bytes in pieces of %d, prepared %v: sealed %#08x, reference %#08x", e.Src, e.Dst, len(b), split, e.prefix.ok, got, want)
	}
}

// TestICRCDifferential checks the ICRC against the reference on random
// packets of every payload length from 0 to past 4096, over IPv4 and IPv6.
func TestICRCDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 8192)
	step := 1
	if testing.Short() {
		step = 61
	}
	ops := []Opcode{RCSendOnly, RCWriteFirst, RCReadResponseOnly, RCSendOnlyWithImmediate}
	for n := 0; n <= 4096+64; n += step {
		e := randomEnvelope(r)
		f := BTHFields{Opcode: ops[n%len(ops)], PKey: uint16(r.Uint32()), DestQP: r.Uint32() & 0xffffff,
			PSN: PSN(r.Uint32() & 0xffffff), AckRequest: r.IntN(2) == 0, MigReq: r.IntN(2) == 0}
		p, err := NewPacket(buf, 0, &f, n)
		if err != nil {
			t.Fatal(err)
		}
		for i := BTHSize; i < len(p)-ICRCSize; i++ {
			p[i] = byte(r.Uint32()) // extended headers, payload, pad
		}
		p[bthECN] = byte(r.Uint32()) // FECN, BECN, resv6: masked
		checkICRCPaths(t, &e, p[:len(p)-ICRCSize], 1+r.IntN(n+1))
	}
	// Buffers shorter than a BTH, which ICRC accepts too.
	for n := range BTHSize {
		e := randomEnvelope(r)
		checkICRCPaths(t, &e, buf[:n], 1)
	}
}

// FuzzICRC compares ICRC and the piecewise StartICRC path with the
// reference on arbitrary envelopes and bytes; testdata/fuzz/FuzzICRC keeps
// inputs the fuzzer found as regression seeds. The seeds stay short (the
// bitwise reference is slow under coverage instrumentation, and the
// differential test covers every length to 4 KiB) but straddle the 64-byte
// piece length where Write hands over to hash/crc32.
func FuzzICRC(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 64)
	for _, n := range []int{0, 8, 60, 200} {
		p := benchPacket(f, RCWriteOnly, n)
		for i := range p[RCWriteOnly.Info().HeaderLen:] {
			p[RCWriteOnly.Info().HeaderLen+i] = byte(r.Uint32())
		}
		f.Add([]byte(p[:len(p)-ICRCSize]), []byte{192, 168, 1, 1}, []byte{192, 168, 1, 2}, uint16(0), uint16(0xc000), 7)
		f.Add([]byte(p[:len(p)-ICRCSize]), make([]byte, 16), []byte{0xfd, 15: 2}, uint16(9), uint16(0x1234), 1000)
	}
	f.Add(buf[:5], []byte{10, 0, 0, 1}, []byte{10, 0, 0, 2}, uint16(1), uint16(2), 0)
	f.Fuzz(func(t *testing.T, b, src, dst []byte, ipid, port uint16, split int) {
		addr := func(a []byte) netip.Addr {
			if len(a) < 16 {
				var v4 [4]byte
				copy(v4[:], a)
				return netip.AddrFrom4(v4)
			}
			return netip.AddrFrom16([16]byte(a))
		}
		e := Envelope{Src: addr(src), Dst: addr(dst), IPID: ipid, FlagsFragment: ^ipid,
			SrcPort: port, DstPort: UDPPort}
		checkICRCPaths(t, &e, b, split)
	})
}
