package action_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// fast is how long one refusal may take here, even under -race on a shared
// machine: a limit is checked before the expensive work, so a refusal is
// far inside the 1 s a request may keep a core. Work that is accepted, at
// the limits, is timed by the benchmarks below instead.
const fast = 250 * time.Millisecond

// quickest is the shortest of three runs of f: a shared machine only ever
// adds time, so the quickest run is the one that says what f costs.
func quickest(f func()) time.Duration {
	best := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		f()
		best = min(best, time.Since(start))
	}
	return best
}

func mustCompile(t *testing.T, doc string) *action.Schema {
	t.Helper()
	s, err := action.NewHeavy().CompileSchema(doc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSchemaLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		code errs.Code // Internal: compiles
		want string
	}{
		{"depth at the limit", stewardtest.DeepSchema(action.MaxSchemaDepth - 1), errs.Internal, ""},
		{"depth past the limit", stewardtest.DeepSchema(action.MaxSchemaDepth), errs.TooLarge, "deeper than 64"},
		{"3,000 levels", stewardtest.DeepSchema(3000), errs.TooLarge, "deeper than 64"},
		{"properties at the limit", stewardtest.WideSchema(action.MaxSchemaKeys-3, false), errs.Internal, ""},
		{"properties past the limit", stewardtest.WideSchema(action.MaxSchemaKeys, false), errs.TooLarge, "more than 4096 object keys"},
		{"10,000 properties", stewardtest.WideSchema(10_000, true), errs.TooLarge, "larger than 64 KiB"},
		{"$ref chain at the limit", stewardtest.RefChainSchema(action.MaxSchemaRefChain), errs.Internal, ""},
		{"$ref chain past the limit", stewardtest.RefChainSchema(action.MaxSchemaRefChain + 1), errs.TooLarge, "more than 32 $refs"},
		{"$ref chain of 1,000", stewardtest.RefChainSchema(1000), errs.TooLarge, "more than 32 $refs"},
		{"$refs that unfold twice over", stewardtest.RefFanSchema(30), errs.TooLarge, "more than 10000 subschemas"},
		{"a recursive schema", `{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}}}`, errs.Internal, ""},
		{"a $ref to an anchor", `{"$defs":{"a":{"$anchor":"a"}},"$ref":"#a"}`, errs.Internal, ""},
		{"a $ref to an anchor that is not there", `{"$ref":"#nowhere"}`, errs.Invalid, "names no $anchor"},
		{"a $ref to the schema's own $id", `{"$id":"https://example.com/tool.json","$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"https://example.com/tool.json#/$defs/a"}}}`, errs.Internal, ""},
		{"a $ref to another document", `{"$ref":"https://example.com/other.json"}`, errs.Invalid, "JSON Pointer"},
		// Found by an independent review: refs inside a target outside
		// $defs were not followed, and the limits below did not see them.
		{"$refs that unfold twice over, outside $defs", stewardtest.RefFanSchemaUnder("components", 30), errs.TooLarge, "more than 10000 subschemas"},
		{"a pattern past the instruction limit", `{"properties":{"s":{"pattern":"[a-z]{1000}[a-z]{1000}"}}}`, errs.Invalid, "instructions"},
		{"a patternProperties key past the limit", `{"patternProperties":{"[a-z]{1000}[a-z]{1000}":{}}}`, errs.Invalid, "instructions"},
		{"a number past the exponent limit in a schema", `{"properties":{"a":{"maxLength":1e999999}}}`, errs.TooLarge, "exponent"},
		{"a maximum that panicked the library", `{"properties":{"a":{"maximum":1e99999999}}}`, errs.TooLarge, "exponent"},
		{"an enum of huge numbers", `{"properties":{"a":{"enum":[1e999999,2e999999]}}}`, errs.TooLarge, "exponent"},
		{"a pattern past the size limit", `{"properties":{"s":{"pattern":"` + strings.Repeat("a", action.MaxPatternBytes+1) + `"}}}`, errs.Invalid, "longer than"},
		{"a $ref to nothing", `{"$ref":"#/$defs/missing"}`, errs.Invalid, "points at nothing"},
		{"a nested $id", `{"properties":{"a":{"$id":"other.json"}}}`, errs.Invalid, "$id"},
		{"a $dynamicRef", `{"$dynamicRef":"#x"}`, errs.Invalid, "$dynamicRef"},
		{"a secret mark that is not a boolean", `{"properties":{"pin":{"type":"string","x-steward-secret":"yes"}}}`, errs.Invalid, "x-steward-secret must be true or false"},
		{"a property named $id", `{"properties":{"$id":{"type":"string"}}}`, errs.Internal, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := action.NewHeavy().CompileSchema(tc.doc)
			if tc.code != errs.Internal {
				if d := quickest(func() { _, _ = action.NewHeavy().CompileSchema(tc.doc) }); d > fast {
					t.Errorf("took %s", d)
				}
			}
			if tc.code == errs.Internal {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || errs.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v (%s), want %s containing %q", err, errs.CodeOf(err), tc.code, tc.want)
			}
		})
	}
}

func TestValueLimits(t *testing.T) {
	bomb, err := action.NewHeavy().CompileSchema(stewardtest.RecursiveFanSchema)
	if err != nil {
		t.Fatal(err)
	}
	open, err := action.NewHeavy().CompileSchema("")
	if err != nil {
		t.Fatal(err)
	}
	patterned := mustCompile(t, `{"properties":{"s":{"pattern":"^[a-z]{900}X$"}}}`)
	var enum strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&enum, "%d,", i)
	}
	var names strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&names, `"n%d",`, i)
	}
	required := mustCompile(t, `{"properties":{"a":{"type":"array","items":{"required":[`+strings.TrimSuffix(names.String(), ",")+`]}}}}`)
	formats := mustCompile(t, `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"a":{"anyOf":[`+strings.TrimSuffix(strings.Repeat(`{"format":"uri-reference"},`, 100), ",")+`]}}}`)
	enumerated := mustCompile(t, `{"properties":{"n":{"items":{"enum":[`+strings.TrimSuffix(enum.String(), ",")+`]}}}}`)
	for _, tc := range []struct {
		name   string
		schema *action.Schema
		value  string
		code   errs.Code // Internal: valid; Invalid: a *action.Violation
		want   string
	}{
		{"depth at the limit", open, `{"a":` + stewardtest.NestedArrays(2*(action.MaxValueDepth-1)) + `}`, errs.Internal, ""},
		{"depth past the limit", open, `{"a":` + stewardtest.NestedArrays(2*action.MaxValueDepth) + `}`, errs.TooLarge, "deeper than 64"},
		{"a recursive schema, 2^13 steps", bomb, stewardtest.NestedX(13), errs.Invalid, "missing property 'x'"},
		{"a recursive schema, 2^40 steps", bomb, stewardtest.NestedX(40), errs.TooLarge, "more than 25000 steps"},
		// Found by an independent review: work the steps did not count.
		{"a long string against a large pattern", patterned, `{"s":"` + strings.Repeat("a", 200_000) + `"}`, errs.TooLarge, "more than 25000 steps"},
		{"a short string against a large pattern", patterned, `{"s":"` + strings.Repeat("a", 100) + `"}`, errs.Invalid, "does not match pattern"},
		{"many values against a long numeric enum", enumerated, `{"n":[` + strings.Repeat("9999,", 2000) + `9999]}`, errs.TooLarge, "more than 25000 steps"},
		{"a number with a huge exponent", open, `{"n":1e999999}`, errs.TooLarge, "exponent"},
		{"many objects against a long required", required, `{"a":[` + strings.Repeat("{},", 20_000) + `{}]}`, errs.TooLarge, "more than 25000 steps"},
		{"a long string against many formats", formats, `{"a":"` + strings.Repeat("a", 200_000) + `"}`, errs.TooLarge, "more than 25000 steps"},
		{"a number with a small exponent", open, `{"n":1e300}`, errs.Internal, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.schema.Validate(context.Background(), []byte(tc.value))
			if tc.code == errs.TooLarge {
				if d := quickest(func() { _ = tc.schema.Validate(context.Background(), []byte(tc.value)) }); d > fast {
					t.Errorf("took %s", d)
				}
			}
			if tc.code == errs.Internal {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var v *action.Violation
			if tc.code == errs.Invalid && errors.As(err, &v) && strings.Contains(err.Error(), tc.want) {
				return
			}
			if err == nil || errs.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v (%s), want %s containing %q", err, errs.CodeOf(err), tc.code, tc.want)
			}
		})
	}
}

// BenchmarkSchemaLimits measures compiling schemas at and past the limits:
// past them, the time is the time to refuse. Run:
//
//	go test -run '^$' -bench SchemaLimits -benchmem ./pkg/action/
func BenchmarkSchemaLimits(b *testing.B) {
	for _, bc := range []struct {
		name string
		doc  string
	}{
		{"depth=63", stewardtest.DeepSchema(action.MaxSchemaDepth - 1)},
		{"depth=3000", stewardtest.DeepSchema(3000)},
		{"properties=4093", stewardtest.WideSchema(action.MaxSchemaKeys-3, false)},
		{"properties=10000", stewardtest.WideSchema(10_000, true)},
		{"ref_chain=32", stewardtest.RefChainSchema(action.MaxSchemaRefChain)},
		{"ref_chain=1000", stewardtest.RefChainSchema(1000)},
		{"ref_fan=30", stewardtest.RefFanSchema(30)},
		{"keys_at_limit_typed", stewardtest.WideSchema(action.MaxSchemaKeys/2-2, true)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.doc)))
			for b.Loop() {
				_, _ = action.NewHeavy().CompileSchema(bc.doc)
			}
		})
	}
}

// BenchmarkValidateLimits measures checking values at and past the value
// limits. Run:
//
//	go test -run '^$' -bench ValidateLimits -benchmem ./pkg/action/
func BenchmarkValidateLimits(b *testing.B) {
	bomb, err := action.NewHeavy().CompileSchema(stewardtest.RecursiveFanSchema)
	if err != nil {
		b.Fatal(err)
	}
	open, _ := action.NewHeavy().CompileSchema("")
	for _, bc := range []struct {
		name   string
		schema *action.Schema
		value  string
	}{
		{"depth=63", open, `{"a":` + stewardtest.NestedArrays(2*(action.MaxValueDepth-1)) + `}`},
		{"nested_arrays=256KiB", open, `{"a":` + stewardtest.NestedArrays(256<<10) + `}`},
		{"recursive_fan=13", bomb, stewardtest.NestedX(13)},
		{"recursive_fan=40", bomb, stewardtest.NestedX(40)},
		{"wide_values=10000", open, wideValue(10_000)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.value)))
			for b.Loop() {
				_ = bc.schema.Validate(context.Background(), []byte(bc.value))
			}
		})
	}
}

func wideValue(n int) string {
	var s strings.Builder
	s.WriteString("{")
	for i := range n {
		if i > 0 {
			s.WriteByte(',')
		}
		fmt.Fprintf(&s, `"k%d":[%d]`, i, i)
	}
	s.WriteString("}")
	return s.String()
}
