package wire

// crcIEEE is a bitwise CRC-32 (reflected polynomial 0xEDB88320, initial and
// final value all ones), written out independently of hash/crc32 so the ICRC
// tests do not check the library against itself.
func crcIEEE(b []byte) uint32 {
	crc := ^uint32(0)
	for _, c := range b {
		crc ^= uint32(c)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0xedb88320
			} else {
				crc >>= 1
			}
		}
	}
	return ^crc
}
