//go:build !amd64

package wire

// Elsewhere hash/crc32 takes every input (it uses the CRC instructions
// of arm64, for one); fold4x512 is never called.
const foldOK = false

func fold4x512(reg uint32, b []byte) uint32 { panic("wire: no folding on this architecture") }
