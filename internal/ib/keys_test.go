package ib_test

import (
	"reflect"
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
)

// TestKeyTypes checks that QPN, LKey and RKey are distinct 32-bit unsigned
// types, as wide as their libibverbs fields, so one cannot be passed for
// another without a conversion.
func TestKeyTypes(t *testing.T) {
	types := []reflect.Type{reflect.TypeFor[ib.QPN](), reflect.TypeFor[ib.LKey](), reflect.TypeFor[ib.RKey]()}
	for i, typ := range types {
		if typ.Kind() != reflect.Uint32 {
			t.Errorf("%v is a %v, want uint32", typ, typ.Kind())
		}
		for _, other := range types[i+1:] {
			if typ.AssignableTo(other) {
				t.Errorf("%v is assignable to %v", typ, other)
			}
		}
	}
}
