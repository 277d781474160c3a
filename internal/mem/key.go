package mem

// Key names a memory region: L_Key and R_Key, which are the same value for
// an MR (doc/protocol.md §12.2). As in rxe it is index<<8 | tag: the index finds
// the table slot in O(1), and the tag, which changes each time the slot is
// reused, makes a key kept by a peer after deregistration fail instead of
// reaching the next region in that slot. Index 0 is never used, so key 0
// is never valid.
type Key uint32

// MaxIndex is the largest index a Key can carry (24 bits).
const MaxIndex = 1<<24 - 1

// makeKey builds the key of slot index with the given tag.
func makeKey(index uint32, tag uint8) Key { return Key(index<<8 | uint32(tag)) }

// Index returns the table index in bits 31–8.
func (k Key) Index() uint32 { return uint32(k) >> 8 }

// Tag returns the reuse tag in bits 7–0.
func (k Key) Tag() uint8 { return uint8(k) }
