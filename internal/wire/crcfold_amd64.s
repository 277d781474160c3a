#include "textflag.h"

// func fold4x512(reg uint32, b []byte) uint32
//
// Folds b, a multiple of 64 bytes and at least 256, with reg xored into
// its first four bytes, into a 128-bit remainder, and reduces that to the
// 32-bit register it returns (crcfold_amd64.go). Four 512-bit accumulators each hold one 64-byte block of a
// 256-byte window; every step folds each 128-bit lane forward by 2048 bits
// onto the lane 256 bytes on, so the four chains of carry-less
// multiplications are independent. At the end the accumulators fold into
// one (512 bits each), then its four lanes into one (128 bits each), and
// that lane to 96 bits, then 64, then by Barrett reduction to 32.
//
// A lane A folded forward by d bits onto B becomes
// B ⊕ A.lo·K.lo ⊕ A.hi·K.hi, with K from foldConsts: rows for d = 2048,
// 512 and 128, each K repeated for the four lanes.
TEXT ·fold4x512(SB), NOSPLIT, $0-36
	MOVL reg+0(FP), AX
	MOVQ b_base+8(FP), SI
	MOVQ b_len+16(FP), CX

	VMOVDQU64 (SI), Z1
	VMOVDQU64 64(SI), Z2
	VMOVDQU64 128(SI), Z3
	VMOVDQU64 192(SI), Z4
	VMOVD     AX, X5 // zeroes the rest of Z5
	VPXORQ    Z5, Z1, Z1
	ADDQ      $256, SI
	SUBQ      $256, CX

	VMOVDQU64 ·foldConsts+0(SB), Z0
	CMPQ      CX, $256
	JB        combine

loop256:
	VMOVDQU64  (SI), Z9
	VMOVDQU64  64(SI), Z10
	VMOVDQU64  128(SI), Z11
	VMOVDQU64  192(SI), Z12
	VPCLMULQDQ $0x00, Z0, Z1, Z5
	VPCLMULQDQ $0x11, Z0, Z1, Z1
	VPCLMULQDQ $0x00, Z0, Z2, Z6
	VPCLMULQDQ $0x11, Z0, Z2, Z2
	VPCLMULQDQ $0x00, Z0, Z3, Z7
	VPCLMULQDQ $0x11, Z0, Z3, Z3
	VPCLMULQDQ $0x00, Z0, Z4, Z8
	VPCLMULQDQ $0x11, Z0, Z4, Z4
	VPTERNLOGD $0x96, Z9, Z5, Z1 // Z1 ^= Z5 ^ Z9
	VPTERNLOGD $0x96, Z10, Z6, Z2
	VPTERNLOGD $0x96, Z11, Z7, Z3
	VPTERNLOGD $0x96, Z12, Z8, Z4
	ADDQ       $256, SI
	SUBQ       $256, CX
	CMPQ       CX, $256
	JAE        loop256

combine:
	// Z1 onto Z2, Z2 onto Z3, Z3 onto Z4: 512 bits each.
	VMOVDQU64  ·foldConsts+64(SB), Z0
	VPCLMULQDQ $0x00, Z0, Z1, Z5
	VPCLMULQDQ $0x11, Z0, Z1, Z1
	VPTERNLOGD $0x96, Z5, Z1, Z2
	VPCLMULQDQ $0x00, Z0, Z2, Z5
	VPCLMULQDQ $0x11, Z0, Z2, Z2
	VPTERNLOGD $0x96, Z5, Z2, Z3
	VPCLMULQDQ $0x00, Z0, Z3, Z5
	VPCLMULQDQ $0x11, Z0, Z3, Z3
	VPTERNLOGD $0x96, Z5, Z3, Z4
	CMPQ       CX, $64
	JB         lanes

tail64:
	// Blocks after the last whole window, one at a time onto Z4.
	VMOVDQU64  (SI), Z9
	VPCLMULQDQ $0x00, Z0, Z4, Z5
	VPCLMULQDQ $0x11, Z0, Z4, Z4
	VPTERNLOGD $0x96, Z9, Z5, Z4
	ADDQ       $64, SI
	SUBQ       $64, CX
	CMPQ       CX, $64
	JAE        tail64

lanes:
	// The lanes of Z4 by address: X4, X6, X7, X8; each onto the next.
	VEXTRACTI32X4 $1, Z4, X6
	VEXTRACTI32X4 $2, Z4, X7
	VEXTRACTI32X4 $3, Z4, X8
	VMOVDQU       ·foldConsts+128(SB), X0
	VPCLMULQDQ    $0x00, X0, X4, X5
	VPCLMULQDQ    $0x11, X0, X4, X4
	VPXOR         X5, X4, X4
	VPXOR         X4, X6, X6
	VPCLMULQDQ    $0x00, X0, X6, X5
	VPCLMULQDQ    $0x11, X0, X6, X6
	VPXOR         X5, X6, X6
	VPXOR         X6, X7, X7
	VPCLMULQDQ    $0x00, X0, X7, X5
	VPCLMULQDQ    $0x11, X0, X7, X7
	VPXOR         X5, X7, X7
	VPXOR         X7, X8, X8

	// X8 is the remainder R. Fold its low half onto its high half, by
	// 64 bits (X0's high constant): T = R.lo·foldK(96) ⊕ R.hi, 96 bits.
	VPCLMULQDQ $0x10, X0, X8, X1
	VPSRLDQ    $8, X8, X2
	VPXOR      X2, X1, X1

	// Then T's low 32 bits onto the rest: U = T.lo32·foldK(64) ⊕ T>>32.
	VMOVDQU    ·barrettConsts+0(SB), X0
	VMOVDQU    ·barrettConsts+32(SB), X3 // the low 32 bits
	VPAND      X3, X1, X2
	VPSRLDQ    $4, X1, X1
	VPCLMULQDQ $0x00, X0, X2, X2
	VPXOR      X2, X1, X1

	// Barrett: the quotient of U by P is ⌊U.lo32·μ⌋ (its low 32 bits,
	// reflected), and U less that multiple of P has the register in its
	// second 32 bits.
	VMOVDQU    ·barrettConsts+16(SB), X0 // low: P, high: μ
	VPAND      X3, X1, X2
	VPCLMULQDQ $0x10, X0, X2, X2
	VPAND      X3, X2, X2
	VPCLMULQDQ $0x00, X0, X2, X2
	VPXOR      X1, X2, X2
	VPEXTRD    $1, X2, AX
	MOVL       AX, ret+32(FP)
	VZEROUPPER
	RET

// func cpuid(leaf, sub uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET

// func xgetbv0() uint32
TEXT ·xgetbv0(SB), NOSPLIT, $0-4
	MOVL   $0, CX
	XGETBV
	MOVL   AX, ret+0(FP)
	RET
