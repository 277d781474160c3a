package verbs_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/verbs"
)

// TestHexFormat: QPNs and keys print in hex for %v and %s, in a struct
// too, as the C tools and this package's errors write them; every other
// verb formats the number.
func TestHexFormat(t *testing.T) {
	q, r, l := verbs.QPN(0x11), verbs.RKey(0x1234), verbs.LKey(0xabcdef01)
	for _, c := range []struct{ got, want string }{
		{fmt.Sprintf("%v %s", q, q), "0x000011 0x000011"},
		{fmt.Sprintf("%v %v", r, l), "0x00001234 0xabcdef01"},
		{fmt.Sprintf("%d %x %#x %06x %X %5d|%-4d|", q, q, q, q, r, q, q), "17 11 0x11 000011 1234    17|17  |"},
		{fmt.Sprintf("[%-10v][%10s][%q][%#v]", q, q, q, q), `[0x000011  ][  0x000011]["0x000011"][0x11]`},
		{fmt.Sprint(q, " ", r), "0x000011 0x00001234"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if wc := fmt.Sprintf("%+v", verbs.WC{WRID: 1, QPNum: q, SrcQP: 0x2a}); !strings.Contains(wc, "QPNum:0x000011") || !strings.Contains(wc, "SrcQP:0x00002a") {
		t.Errorf("a WC prints %s", wc)
	}
}
