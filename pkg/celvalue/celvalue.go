// Package celvalue holds what Steward's CEL environments share so that an
// expression gives the same answer every time it is evaluated over the same
// data: JSON as CEL values whose maps iterate in key order (Go's maps do
// not, and map() or filter() over one would build its list in a different
// order each time), and a cost for a list scan, which CEL prices as one
// step. Acceptance criteria (services/control) and plans (pkg/plan) use it.
//
// The functions are pure and safe for concurrent use.
package celvalue

import (
	"fmt"
	"reflect"
	"slices"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// FromJSON turns a value decoded by encoding/json (without UseNumber) into
// a CEL value; a value of any other Go type is a CEL error value.
func FromJSON(v any) ref.Val {
	switch v := v.(type) {
	case nil:
		return types.NullValue
	case bool:
		return types.Bool(v)
	case float64:
		return types.Double(v)
	case string:
		return types.String(v)
	case []any:
		elems := make([]ref.Val, len(v))
		for i, e := range v {
			elems[i] = FromJSON(e)
		}
		return types.NewRefValList(types.DefaultTypeAdapter, elems)
	case map[string]any:
		fields := make(map[string]ref.Val, len(v))
		for k, e := range v {
			fields[k] = FromJSON(e)
		}
		return Object(fields)
	}
	return types.NewErr("unexpected JSON value %T", v)
}

// Object is a CEL map with string keys that iterates in key order, so that
// map() and filter() over it give the same list every time.
func Object(fields map[string]ref.Val) ref.Val {
	m := make(map[ref.Val]ref.Val, len(fields))
	keys := make([]ref.Val, 0, len(fields))
	for k, v := range fields {
		m[types.String(k)] = v
		keys = append(keys, types.String(k))
	}
	slices.SortFunc(keys, func(a, b ref.Val) int { return int(a.(types.String).Compare(b).(types.Int)) })
	return sortedMap{Mapper: types.NewRefValMap(types.DefaultTypeAdapter, m), keys: keys}
}

// ScanCost counts a list's in towards the cost limit in proportion to the
// list's length: CEL prices the scan as one step.
func ScanCost() cel.ProgramOption {
	scan := func(args []ref.Val, _ ref.Val) *uint64 {
		c := uint64(1)
		if len(args) == 2 {
			if l, ok := args[1].(traits.Sizer); ok {
				if n, ok := l.Size().(types.Int); ok && n > 0 {
					c += uint64(n)
				}
			}
		}
		return &c
	}
	return cel.CostTrackerOptions(cost.OverloadTracker(overloads.InList, scan))
}

// sortedMap is a CEL map whose iteration follows keys. It is not
// traits.Foldable, so comprehensions iterate it through Iterator.
type sortedMap struct {
	traits.Mapper
	keys []ref.Val
}

func (m sortedMap) Iterator() traits.Iterator { return &keyIterator{keys: m.keys} }

// keyIterator walks a sortedMap's keys.
type keyIterator struct {
	keys []ref.Val
	next int
}

func (it *keyIterator) HasNext() ref.Val { return types.Bool(it.next < len(it.keys)) }

func (it *keyIterator) Next() ref.Val {
	if it.next >= len(it.keys) {
		return types.NewErr("no more keys")
	}
	it.next++
	return it.keys[it.next-1]
}

func (it *keyIterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, fmt.Errorf("an iterator has no native form")
}

func (it *keyIterator) ConvertToType(ref.Type) ref.Val {
	return types.NewErr("an iterator cannot be converted")
}

func (it *keyIterator) Equal(ref.Val) ref.Val { return types.False }

func (it *keyIterator) Type() ref.Type { return types.IteratorType }

func (it *keyIterator) Value() any { return nil }
