package verbs

import (
	"reflect"
	"testing"

	"github.com/goverbs/goverbs/internal/engine"
)

// TestLayout checks what convert_unsafe.go relies on: each verbs type the
// verbs hand to the engine by pointer has the engine type's layout.
func TestLayout(t *testing.T) {
	for _, c := range []struct{ ours, theirs any }{
		{SGE{}, engine.SGE{}},
		{SendWR{}, engine.SendWR{}},
		{RecvWR{}, engine.RecvWR{}},
		{WC{}, engine.WC{}},
		{QPAttr{}, engine.QPAttr{}},
		{QPCap{}, engine.QPCap{}},
		{AHAttr{}, engine.AHAttr{}},
	} {
		sameLayout(t, reflect.TypeOf(c.ours), reflect.TypeOf(c.theirs), map[reflect.Type]bool{})
	}
}

// sameLayout reports every difference of size, alignment, kind, field name
// or offset between a and b, following pointers, slices and arrays; seen
// stops the recursion of a self-referencing type (SendWR.Next).
func sameLayout(t *testing.T, a, b reflect.Type, seen map[reflect.Type]bool) {
	t.Helper()
	if seen[a] {
		return
	}
	seen[a] = true
	if a.Kind() == reflect.Struct && b.Kind() != reflect.Struct && a.NumField() > 0 &&
		a.Field(0).Offset == 0 && a.Field(0).Type == b {
		return // a begins with a b: a pointer to an a is one to a b (MW, MR, AH)
	}
	if a.Kind() != b.Kind() || a.Size() != b.Size() || a.Align() != b.Align() {
		t.Errorf("%v (%v, %d bytes) and %v (%v, %d bytes) differ", a, a.Kind(), a.Size(), b, b.Kind(), b.Size())
		return
	}
	switch a.Kind() {
	case reflect.Struct:
		if a.NumField() != b.NumField() {
			t.Errorf("%v has %d fields, %v %d", a, a.NumField(), b, b.NumField())
			return
		}
		for i := range a.NumField() {
			fa, fb := a.Field(i), b.Field(i)
			if fa.Name != fb.Name || fa.Offset != fb.Offset {
				t.Errorf("%v field %d: %s at %d, %v has %s at %d", a, i, fa.Name, fa.Offset, b, fb.Name, fb.Offset)
				continue
			}
			sameLayout(t, fa.Type, fb.Type, seen)
		}
	case reflect.Pointer, reflect.Slice:
		sameLayout(t, a.Elem(), b.Elem(), seen)
	case reflect.Array:
		if a.Len() != b.Len() {
			t.Errorf("%v and %v differ in length", a, b)
		}
		sameLayout(t, a.Elem(), b.Elem(), seen)
	}
}
