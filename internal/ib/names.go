package ib

import (
	"strconv"
	"strings"
)

// flagName names one bit of a flag set.
type flagName struct {
	bit  uint32
	name string
}

// formatFlags spells v as the names of its bits joined by "|", in the order
// of names, followed by the bits names does not cover as one hex number:
// "LOCAL_WRITE|REMOTE_READ|0x200". The empty set is "0".
func formatFlags(v uint32, names []flagName) string {
	if v == 0 {
		return "0"
	}
	var b strings.Builder
	for _, f := range names {
		if v&f.bit == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		b.WriteString(f.name)
		v &^= f.bit
	}
	if v != 0 {
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		b.WriteString("0x")
		b.WriteString(strconv.FormatUint(uint64(v), 16))
	}
	return b.String()
}

// enumString returns names[v], or typeName(v) when v has no name.
func enumString(names []string, v uint8, typeName string) string {
	if int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return typeName + "(" + strconv.Itoa(int(v)) + ")"
}
