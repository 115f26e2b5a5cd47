package canary

import (
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/steward-run/steward/pkg/keyfile"
)

// MaxFileBytes bounds a definition and a baseline file: fifty samples of
// fifty steps fit many times over, and a file past it (a mistake, or a
// hostile one in a pull request) is refused before it is read whole.
const MaxFileBytes = 4 << 20

// readFile reads file, refusing one past MaxFileBytes.
func readFile(file string) ([]byte, error) { return keyfile.ReadAtMost(file, MaxFileBytes) }

// wrongType is what Go type t wants when JSON value v is not of it ("" if
// it is): a whole number for an integer, a list for a slice, and so on.
func wrongType(v any, t reflect.Type) string {
	k := t.Kind()
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		if k == reflect.String || k == reflect.Interface {
			return ""
		}
	case bool:
		if k == reflect.Bool || k == reflect.Interface {
			return ""
		}
	case float64:
		switch {
		case k == reflect.Float64 || k == reflect.Float32 || k == reflect.Interface:
			return ""
		case k >= reflect.Int && k <= reflect.Int64 && x == math.Trunc(x) && math.Abs(x) < 1<<63:
			return ""
		}
	case []any:
		if k == reflect.Slice || k == reflect.Interface {
			return ""
		}
	case map[string]any:
		if k == reflect.Struct || k == reflect.Map || k == reflect.Interface {
			return ""
		}
	}
	switch {
	case k >= reflect.Int && k <= reflect.Int64:
		return "a whole number"
	case k == reflect.Float64 || k == reflect.Float32:
		return "a number"
	case k == reflect.String:
		return "a string"
	case k == reflect.Bool:
		return "true or false"
	case k == reflect.Slice:
		return "a list"
	}
	return "an object"
}

func jsonKind(v any) string {
	switch x := v.(type) {
	case string:
		return "a string"
	case bool:
		return fmt.Sprint(x)
	case float64:
		return "the number " + strconv.FormatFloat(x, 'g', -1, 64)
	case []any:
		return "a list"
	}
	return "an object"
}
