package action_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/action"
)

// FuzzCanonical canonicalises parameters as a proposal carries them. The
// canonical form is valid JSON that means the same values, and it is a
// fixed point: the parameters read back from a stored request (as a
// retry or a compensation reads them) canonicalise to the same bytes, so
// to the same request_hash. Parameters that arrive over RPC, as a
// google.protobuf.Struct, canonicalise whenever the RPC decodes them, to
// the same bytes as the JSON they came in.
func FuzzCanonical(f *testing.F) {
	for _, p := range []string{
		`{}`,
		`{"b": 1, "a": [true, null, "x"]}`,
		`{"n": 1e21, "m": 1.5e-7, "z": -0, "i": 12345678901234567890, "f": 0.1}`,
		`{"s": "<tag> & \u2028 \u00e9 \"q\" \\ \t"}`,
		`{"deep": {"z": {"y": [[{}]]}}, "": ""}`,
		`{"dup": 1, "dup": 2}`,
		"{\"bad\": \"\xff\"}",
		`[1]`,
		`{"a": 1} {}`,
	} {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		req := action.Request{TaskID: "t1", Tool: "w", ToolVersion: "1", Target: "x", Params: params}
		canonical, err := action.Canonical(req)
		if err == nil {
			checkCanonical(t, req, canonical)
		}
		var s structpb.Struct
		if protojson.Unmarshal(params, &s) != nil {
			return
		}
		data, err := protojson.Marshal(&s)
		if err != nil {
			t.Fatalf("a decoded Struct does not encode: %v", err)
		}
		req.Params = data
		viaRPC, err := action.Canonical(req)
		if err != nil {
			t.Fatalf("the RPC took %s, but its canonical form fails: %v", params, err)
		}
		if canonical != nil && !bytes.Equal(viaRPC, canonical) {
			t.Fatalf("%s canonicalises to\n%s\nbut, taken by the RPC, to\n%s", params, canonical, viaRPC)
		}
	})
}

// checkCanonical checks the canonical form of req.
func checkCanonical(t *testing.T, req action.Request, canonical []byte) {
	t.Helper()
	if !json.Valid(canonical) {
		t.Fatalf("not JSON: %s", canonical)
	}
	var stored struct {
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(canonical, &stored); err != nil {
		t.Fatal(err)
	}
	if !sameJSON(decode(t, req.Params), decode(t, stored.Params)) {
		t.Fatalf("%s canonicalised to %s, which means something else", req.Params, stored.Params)
	}
	again := req
	again.Params = stored.Params
	if twice, err := action.Canonical(again); err != nil || !bytes.Equal(twice, canonical) {
		t.Fatalf("not a fixed point:\n%s\n%s (%v)", canonical, twice, err)
	}
	var whole any
	if err := json.Unmarshal(canonical, &whole); err != nil {
		t.Fatal(err)
	}
	if re, err := action.CanonicalJSON(whole); err != nil || !bytes.Equal(re, canonical) {
		t.Fatalf("CanonicalJSON of the canonical request differs:\n%s\n%s (%v)", canonical, re, err)
	}
}

// decode reads JSON as Canonical does, numbers kept as written.
func decode(t *testing.T, data []byte) any {
	t.Helper()
	if len(data) == 0 {
		return map[string]any{}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// sameJSON reports whether a and b are the same JSON value, numbers
// compared as the doubles the canonical form keeps.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		return ok && double(x) == double(y)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

func double(n json.Number) float64 {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return math.NaN()
	}
	return f
}
