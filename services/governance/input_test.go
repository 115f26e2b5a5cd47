package governance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	_ "google.golang.org/protobuf/types/known/wrapperspb" // kinds.proto imports wrappers.proto

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/governance/policy"
)

// jsonRoutePolicyInput is policyInput as it was built through JSON
// (protojson, encoding/json, a round trip of the whole document): the
// reference the direct walk must match, in what OPA sees and in the hash
// every recorded snapshot carries.
func jsonRoutePolicyInput(t *stewardv1.Task, tool *stewardv1.ToolContract, a *stewardv1.Action, request []byte) (map[string]any, string, error) {
	taskFacts, err := jsonRouteMap(t.Contract)
	if err != nil {
		return nil, "", err
	}
	taskFacts["status"] = t.Status.String()
	toolFacts, err := jsonRouteMap(tool)
	if err != nil {
		return nil, "", err
	}
	var req struct {
		Params map[string]any `json:"params"`
	}
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, "", fmt.Errorf("canonical request: %w", err)
	}
	c := t.Credential.GetCredential()
	credential := map[string]any{
		"credential_ref": c.GetCredentialId(),
		"principal":      c.GetPrincipal(),
		"allowed_tools":  append([]string{}, c.GetAllowedTools()...),
		"scopes":         append([]string{}, c.GetScopes()...),
		"delegated":      c.GetParentCredentialId() != "",
		"depth":          len(t.Credential.GetChain()),
	}
	if c.GetCredentialId() == "" {
		credential["credential_ref"] = t.Contract.GetCredentialRef()
	}
	rationale := a.Rationale
	if rationale == nil {
		rationale = &stewardv1.ActionRationale{}
	}
	rationaleFacts, err := jsonRouteMap(rationale)
	if err != nil {
		return nil, "", err
	}
	input := map[string]any{
		"task": taskFacts,
		"tool": toolFacts,
		"action": map[string]any{
			"compensates":  a.Compensates,
			"rationale":    rationaleFacts,
			"action_id":    a.ActionId,
			"tool":         a.Tool,
			"tool_version": a.ToolVersion,
			"target":       a.Target,
			"params":       req.Params,
			"effect_class": a.EffectClass.String(),
			"proposed_by":  a.ProposedBy,
			"edit_of":      a.EditOf,
			"amendment_of": a.AmendmentOf,
		},
		"credential": credential,
		"risk":       map[string]any{"contract_risk_tier": t.Contract.GetRiskTier().String()},
	}
	data, _ := json.Marshal(input)
	var normal any
	_ = json.Unmarshal(data, &normal)
	canonical, err := action.CanonicalJSON(normal)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(canonical)
	return input, hex.EncodeToString(sum[:]), nil
}

func jsonRouteMap(m proto.Message) (map[string]any, error) {
	data, err := facts.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(data, &out)
}

// opaView is input as a prepared query turns rego.EvalInput into a value
// (rego.parseRawInput), printed with every number's text.
func opaView(t *testing.T, input any) string {
	t.Helper()
	return opaValue(t, input).String()
}

// opaValue is input as OPA holds it.
func opaValue(t *testing.T, input any) ast.Value {
	t.Helper()
	if err := util.RoundTripFast(&input); err != nil {
		t.Fatal(err)
	}
	v, err := ast.InterfaceToValue(input)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// weird are strings JSON treats specially.
var weird = []string{"", "plain", "é ü 日本 🙂", "<&>\"\\\n\t\x01", "\u2028\u2029", "\x7f"}

// fill sets every field of m, recursively to depth, with values from
// seed: lists and maps of two, every scalar kind at its edges.
func fill(m protoreflect.Message, seed, depth int) {
	fds := m.Descriptor().Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		n := seed + i
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for j := range 2 {
				l.Append(scalar(m, fd, l.NewElement, n+j, depth))
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for j := range 2 {
				k := protoreflect.ValueOf(fmt.Sprint("k", n+j)).MapKey()
				if fd.MapKey().Kind() != protoreflect.StringKind {
					k = protoreflect.ValueOfInt32(int32(n + j)).MapKey()
				}
				mp.Set(k, scalar(m, fd.MapValue(), mp.NewValue, n+j, depth))
			}
		default:
			m.Set(fd, scalar(m, fd, func() protoreflect.Value { return m.NewField(fd) }, n, depth))
		}
	}
}

func scalar(parent protoreflect.Message, fd protoreflect.FieldDescriptor, fresh func() protoreflect.Value, n, depth int) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(n%2 == 0)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(weird[n%len(weird)] + fmt.Sprint(n))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32([]int32{0, -1, math.MaxInt32, math.MinInt32}[n%4])
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32([]uint32{0, 7, math.MaxUint32}[n%3])
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64([]int64{0, -5, math.MaxInt64, math.MinInt64, 1 << 53}[n%5])
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64([]uint64{0, math.MaxUint64}[n%2])
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32([]float32{0, 0.1, -1e-7, 3.4e38, 1e21, float32(math.Inf(1)), float32(math.NaN())}[n%7])
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64([]float64{0, 0.1, -1e-7, 1e21, 123456789.125, math.Copysign(0, -1), math.Inf(-1), math.NaN()}[n%8])
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(weird[n%len(weird)] + "\xff"))
	case protoreflect.EnumKind:
		values := fd.Enum().Values()
		if n%5 == 4 {
			return protoreflect.ValueOfEnum(99) // a number the enum does not name
		}
		return protoreflect.ValueOfEnum(values.Get(n % values.Len()).Number())
	}
	v := fresh()
	msg := v.Message()
	switch msg.Descriptor().FullName() {
	case "google.protobuf.Timestamp":
		ts := []*timestamppb.Timestamp{{Seconds: 1_700_000_000}, {Seconds: 1_700_000_000, Nanos: 5_000_000}, {Seconds: -1, Nanos: 123_456_789}, {Seconds: 0, Nanos: 1_000}}[n%4]
		proto.Merge(msg.Interface(), ts)
	case "google.protobuf.Duration":
		d := []*durationpb.Duration{{Seconds: 90}, {Nanos: 1_500_000}, {Seconds: -3, Nanos: -20}, {}}[n%4]
		proto.Merge(msg.Interface(), d)
	case "google.protobuf.Struct":
		s, _ := structpb.NewStruct(map[string]any{"a": 1.5, "b": []any{"x", nil, true}, "c": map[string]any{}})
		proto.Merge(msg.Interface(), s)
	default:
		if depth > 0 {
			fill(msg, n*7, depth-1)
		}
	}
	return v
}

// kinds is a message with every field kind the contracts do not use
// yet, so that the walk is held to protojson for them too.
const kinds = `
name: "kinds.proto" package: "kinds" syntax: "proto3"
dependency: ["google/protobuf/timestamp.proto", "google/protobuf/duration.proto", "google/protobuf/struct.proto", "google/protobuf/wrappers.proto"]
message_type {
  name: "Kinds"
  field { name: "f" number: 1 type: TYPE_FLOAT label: LABEL_OPTIONAL json_name: "f" }
  field { name: "d" number: 2 type: TYPE_DOUBLE label: LABEL_OPTIONAL json_name: "d" }
  field { name: "b" number: 3 type: TYPE_BYTES label: LABEL_OPTIONAL json_name: "b" }
  field { name: "s64" number: 4 type: TYPE_SINT64 label: LABEL_OPTIONAL json_name: "s64" }
  field { name: "fx" number: 5 type: TYPE_FIXED64 label: LABEL_OPTIONAL json_name: "fx" }
  field { name: "sf32" number: 6 type: TYPE_SFIXED32 label: LABEL_OPTIONAL json_name: "sf32" }
  field { name: "ds" number: 7 type: TYPE_DOUBLE label: LABEL_REPEATED json_name: "ds" }
  field { name: "by_name" number: 8 type: TYPE_MESSAGE label: LABEL_REPEATED type_name: ".kinds.Kinds.ByNameEntry" json_name: "byName" }
  field { name: "by_number" number: 9 type: TYPE_MESSAGE label: LABEL_REPEATED type_name: ".kinds.Kinds.ByNumberEntry" json_name: "byNumber" }
  field { name: "st" number: 10 type: TYPE_MESSAGE label: LABEL_OPTIONAL type_name: ".google.protobuf.Struct" json_name: "st" }
  field { name: "wrapped" number: 11 type: TYPE_MESSAGE label: LABEL_OPTIONAL type_name: ".google.protobuf.Int64Value" json_name: "wrapped" }
  field { name: "opt" number: 12 type: TYPE_STRING label: LABEL_OPTIONAL json_name: "opt" proto3_optional: true oneof_index: 0 }
  field { name: "child" number: 13 type: TYPE_MESSAGE label: LABEL_OPTIONAL type_name: ".kinds.Kinds" json_name: "child" }
  field { name: "at" number: 14 type: TYPE_MESSAGE label: LABEL_OPTIONAL type_name: ".google.protobuf.Timestamp" json_name: "at" }
  field { name: "after" number: 15 type: TYPE_MESSAGE label: LABEL_OPTIONAL type_name: ".google.protobuf.Duration" json_name: "after" }
  field { name: "nv" number: 16 type: TYPE_ENUM label: LABEL_OPTIONAL type_name: ".google.protobuf.NullValue" json_name: "nv" }
  nested_type { name: "ByNameEntry" field { name: "key" number: 1 type: TYPE_STRING label: LABEL_OPTIONAL json_name: "key" } field { name: "value" number: 2 type: TYPE_FLOAT label: LABEL_OPTIONAL json_name: "value" } options { map_entry: true } }
  nested_type { name: "ByNumberEntry" field { name: "key" number: 1 type: TYPE_INT32 label: LABEL_OPTIONAL json_name: "key" } field { name: "value" number: 2 type: TYPE_MESSAGE label: LABEL_OPTIONAL type_name: ".google.protobuf.Duration" json_name: "value" } options { map_entry: true } }
  oneof_decl { name: "_opt" }
}`

func kindsMessage(t *testing.T) protoreflect.MessageDescriptor {
	t.Helper()
	var fdp descriptorpb.FileDescriptorProto
	if err := prototext.Unmarshal([]byte(kinds), &fdp); err != nil {
		t.Fatal(err)
	}
	fd, err := protodesc.NewFile(&fdp, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	return fd.Messages().ByName("Kinds")
}

// TestProtoFactsMatchProtojson holds the walk to protojson then
// encoding/json, for every field kind, set and unset.
func TestProtoFactsMatchProtojson(t *testing.T) {
	kinds := kindsMessage(t)
	var msgs []proto.Message
	for seed := range 9 {
		full := dynamicpb.NewMessage(kinds)
		fill(full, seed, 2)
		msgs = append(msgs, full)
	}
	msgs = append(msgs, dynamicpb.NewMessage(kinds), (*stewardv1.Tool)(nil), &stewardv1.Event{})
	for i, m := range msgs {
		want, wantErr := jsonRouteMap(m)
		got, err := protoFacts(m.ProtoReflect())
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("message %d: err = %v, JSON route's = %v", i, err, wantErr)
		}
		if err != nil {
			continue
		}
		if g, w := opaView(t, got), opaView(t, want); g != w {
			t.Errorf("message %d:\n got %s\nwant %s", i, g, w)
		}
	}
}

func fullContract(seed int) *stewardv1.TaskContract {
	c := &stewardv1.TaskContract{}
	fill(c.ProtoReflect(), seed, 3)
	return c
}

func fullTool(seed int) *stewardv1.ToolContract {
	c := &stewardv1.ToolContract{}
	fill(c.ProtoReflect(), seed, 3) // the last endpoint set wins the oneof
	if seed%2 == 1 {
		c.Endpoint = &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{}}
	}
	return c
}

// TestPolicyInputMatchesJSONRoute: the input OPA gets and its hash are
// what the JSON route gave, so every recorded input_hash still holds.
func TestPolicyInputMatchesJSONRoute(t *testing.T) {
	params := []string{
		`{}`,
		`{"to":["a@b.c","é 🙂"],"n":3,"x":2.5,"tiny":1e-7,"big":1e21,"neg":-0.000001,"nested":{"a":[1,{"b":null}],"t":true,"s":"<&>\u2028"}}`,
		`{"wide":` + `[` + strings.Repeat(`123456789.125,`, 20) + `0]}`,
	}
	tasks := []*stewardv1.Task{
		{},
		{Status: stewardv1.TaskStatus_TASK_STATUS_RUNNING, Contract: &stewardv1.TaskContract{TaskId: "t1", CredentialRef: "cred-1", RiskTier: stewardv1.RiskTier(2)}},
		{Status: stewardv1.TaskStatus(77), Contract: fullContract(0)},
		{Status: stewardv1.TaskStatus_TASK_STATUS_RUNNING, Contract: fullContract(5), Credential: &stewardv1.CredentialState{
			Credential: &stewardv1.TaskCredential{CredentialId: "cred-2", Principal: "bob\xff", AllowedTools: []string{"mail", "bad\xfe\xff"}, Scopes: []string{}, ParentCredentialId: "cred-1"},
			Chain:      []*stewardv1.SignedCredential{{}, {}},
		}},
	}
	tools := []*stewardv1.ToolContract{{}, {Name: "mail", Version: "1"}, fullTool(0), fullTool(3)}
	actions := []*stewardv1.Action{
		{},
		{ActionId: "act-1", Tool: "mail", ToolVersion: "1", Target: "x@y.z", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, ProposedBy: "agent", EditOf: "act-0"},
		{ActionId: "act-2", Tool: "mail\xff", Target: "日本", EffectClass: stewardv1.EffectClass(42)},
		{ActionId: "act-3", Tool: "mail", Compensates: "act-1", Rationale: &stewardv1.ActionRationale{
			ExpectedImpact: "é ü 日本 🙂 <&>\u2028", RollbackPlan: "undo", Evidence: []string{"ticket:7", "kv://x"}, Alternatives: []string{"wait"},
		}},
	}
	n := 0
	for ti, tk := range tasks {
		for ui, tool := range tools {
			for ai, a := range actions {
				for pi, p := range params {
					request, err := action.Canonical(action.Request{TaskID: "t", Tool: a.Tool, Target: a.Target, Params: []byte(p)})
					if err != nil {
						t.Fatal(err)
					}
					name := fmt.Sprintf("task%d/tool%d/action%d/params%d", ti, ui, ai, pi)
					compareInputs(t, name, tk, tool, a, request)
					n++
				}
			}
		}
	}
	compareInputs(t, "no params", tasks[1], tools[1], actions[1], []byte(`{"target":"x"}`))
	compareInputs(t, "null params", tasks[1], tools[1], actions[1], []byte(`{"params":null}`))
	compareInputs(t, "not JSON", tasks[1], tools[1], actions[1], []byte(`{"params":`))
	bad := fullContract(1)
	bad.Intent = "\xff"
	compareInputs(t, "invalid contract", &stewardv1.Task{Contract: bad}, tools[1], actions[1], []byte(`{}`))
	late := fullContract(2)
	late.Deadline = &timestamppb.Timestamp{Seconds: 1 << 40}
	compareInputs(t, "timestamp out of range", &stewardv1.Task{Contract: late}, tools[1], actions[1], []byte(`{}`))
}

func compareInputs(t *testing.T, name string, tk *stewardv1.Task, tool *stewardv1.ToolContract, a *stewardv1.Action, request []byte) {
	t.Helper()
	want, wantHash, wantErr := jsonRoutePolicyInput(tk, tool, a, request)
	facts, err := newToolFacts("", tool)
	if err != nil {
		t.Fatalf("%s: tool facts: %v", name, err)
	}
	got, gotRec, err := inputOf(tk, facts, a, request)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: err = %v, JSON route's = %v", name, err, wantErr)
	}
	if err != nil {
		return
	}
	if gotRec.hash != wantHash {
		t.Errorf("%s: input hash %s, JSON route's %s", name, gotRec.hash, wantHash)
	}
	// What governance keeps for auditors is the document its hash is
	// over, the JSON route's (which OPA sees for every string a decoded
	// proto can hold: valid UTF-8), decoded as an auditor's
	// re-evaluation decodes it.
	dec := json.NewDecoder(bytes.NewReader(gotRec.canonical))
	dec.UseNumber()
	var recorded map[string]any
	if err := dec.Decode(&recorded); err != nil {
		t.Fatalf("%s: recorded input: %v", name, err)
	}
	// Equal as OPA compares values: numbers by value (1e+21 is
	// 1000000000000000000000).
	// A string of invalid UTF-8, which no decoded proto holds, is
	// recorded as JSON carries it (U+FFFD), as it has always been hashed.
	if g, w := opaValue(t, recorded), opaValue(t, want); utf8.ValidString(fmt.Sprint(want)) && ast.Compare(g, w) != 0 {
		t.Errorf("%s: the recorded input reads as\n %s\nthe JSON route's\n %s", name, g, w)
	}
	doc, err := ast.JSON(got)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if g, w := opaView(t, doc), opaView(t, want); g != w {
		t.Errorf("%s: OPA sees\n %s\nwant\n %s", name, g, w)
	}
}

// TestEvaluationLeavesInputAsItWas: a tool's facts are shared by every
// evaluation of the tool, and a task's by its actions', so OPA must only
// read the input — evaluations at once (under -race) and after.
func TestEvaluationLeavesInputAsItWas(t *testing.T) {
	engine, err := policy.Load(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	tk, tool, a, request := benchAction(t)
	var cache toolFactsCache
	facts, err := cache.of("", tool)
	if err != nil {
		t.Fatal(err)
	}
	before, err := action.CanonicalJSON(facts.facts)
	if err != nil {
		t.Fatal(err)
	}
	task, err := newTaskFacts(tk)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := json.Marshal([]policy.Part{task.value, facts.value})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	for range 4 {
		go func() {
			input, _, err := policyInput(task, tk, facts, a, request)
			if err == nil {
				_, err = engine.EvaluateValue(context.Background(), input)
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	after, err := action.CanonicalJSON(facts.facts)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) || string(after) != string(facts.canonical) {
		t.Fatalf("tool facts changed:\n %s\n %s", before, after)
	}
	if again, err := json.Marshal([]policy.Part{task.value, facts.value}); err != nil || string(again) != string(parts) {
		t.Fatalf("the task's or the tool's part changed (%v):\n %s\n %s", err, parts, again)
	}
}

// BenchmarkPolicyInput measures building one action's policy input and
// its hash, for a task with a typical contract, directly and by the JSON
// route it replaced. Run:
//
//	go test -run '^$' -bench PolicyInput -benchmem ./services/governance/
func BenchmarkPolicyInput(b *testing.B) {
	tk, tool, a, request := benchAction(b)
	b.Run("direct", func(b *testing.B) {
		var cache toolFactsCache
		var tasks taskFactsCache
		var inputs actionInputs
		for b.Loop() {
			facts, err := cache.of("", tool)
			if err != nil {
				b.Fatal(err)
			}
			task, err := tasks.of(tk)
			if err != nil {
				b.Fatal(err)
			}
			buf := inputs.buffer() // as Plane.snapshot lends it
			if _, _, err := inputs.policyInput(task, tk, facts, a, request, buf); err != nil {
				b.Fatal(err)
			}
			inputs.release(buf)
		}
	})
	b.Run("json_route", func(b *testing.B) { // as it was built before
		for b.Loop() {
			if _, _, err := jsonRoutePolicyInput(tk, tool, a, request); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPolicyEvaluation measures what one action's policy costs in
// all: its input, built as BenchmarkPolicyInput's, evaluated by the
// default bundle and by an allow-all one (the bench's). Run:
//
//	go test -run '^$' -bench PolicyEvaluation -benchmem ./services/governance/
func BenchmarkPolicyEvaluation(b *testing.B) {
	tk, tool, a, request := benchAction(b)
	allow := b.TempDir()
	if err := os.WriteFile(filepath.Join(allow, "allow.rego"), []byte(`package steward.policy

decision := {"decision": "allow", "reasons": ["benchmark: allow all"]}
`), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, bundle := range []struct{ name, dir string }{{"default", ""}, {"allow", allow}} {
		engine, err := policy.Load(context.Background(), bundle.dir)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bundle.name, func(b *testing.B) {
			var cache toolFactsCache
			var tasks taskFactsCache
			var inputs actionInputs
			for b.Loop() {
				facts, err := cache.of("", tool)
				if err != nil {
					b.Fatal(err)
				}
				task, err := tasks.of(tk)
				if err != nil {
					b.Fatal(err)
				}
				buf := inputs.buffer()
				input, _, err := inputs.policyInput(task, tk, facts, a, request, buf)
				if err != nil {
					b.Fatal(err)
				}
				if res, err := engine.EvaluateValue(context.Background(), input); err != nil || res.Decision == policy.Deny {
					b.Fatal(res, err)
				}
				inputs.release(buf)
			}
		})
	}
}

// benchAction is a running task with a contract as tasks have them, a
// mail tool and one proposal to it.
func benchAction(b testing.TB) (*stewardv1.Task, *stewardv1.ToolContract, *stewardv1.Action, []byte) {
	tk := &stewardv1.Task{Status: stewardv1.TaskStatus_TASK_STATUS_RUNNING, Contract: benchContract(), Credential: &stewardv1.CredentialState{
		Credential: &stewardv1.TaskCredential{CredentialId: "cred-1", Principal: "alice", AllowedTools: []string{"mail", "search"}, Scopes: []string{"mail.send"}},
	}}
	tool := &stewardv1.ToolContract{Name: "mail", Version: "1", Description: "Sends mail", ParametersSchema: `{"type":"object"}`,
		EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE, RequiredScopes: []string{"mail.send"},
		Timeout: durationpb.New(10 * time.Second), CostMicrosPerCall: 1500,
		Endpoint: &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{}}}
	a := &stewardv1.Action{ActionId: "act-1", Tool: "mail", ToolVersion: "1", Target: "bob@example.com", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE, ProposedBy: "agent"}
	request, err := action.Canonical(action.Request{TaskID: "t1", Tool: "mail", ToolVersion: "1", Target: "bob@example.com",
		Params: []byte(`{"to":["bob@example.com"],"subject":"Weekly report","body":"All done.","priority":2}`)})
	if err != nil {
		b.Fatal(err)
	}
	return tk, tool, a, request
}

// benchContract is a contract as tasks have them: owners, a budget,
// limits and timers, two criteria.
func benchContract() *stewardv1.TaskContract {
	return &stewardv1.TaskContract{
		TaskId: "t1", Intent: "Send the weekly report", DesiredOutcome: "Report sent", RequesterRef: "alice",
		AuthorizerRef: "alice", AccountableOwnerRef: "alice", AcceptanceOwnerRef: "bob", CredentialRef: "cred-1",
		Budget:       &stewardv1.Budget{MaxTokens: 100_000, MaxCostMicros: 5_000_000, Currency: "USD"},
		Deadline:     timestamppb.New(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)),
		RiskTier:     stewardv1.RiskTier(2),
		AllowedTools: []string{"mail", "search"}, Scopes: []string{"mail.send"},
		AcceptanceCriteria: []*stewardv1.AcceptanceCriterion{{Id: "sent", Expression: `"receipt" in artifacts`}, {Id: "short", Expression: `size(artifacts) < 3`}},
		Limits:             &stewardv1.TaskLimits{MaxActions: 20},
		Timers:             &stewardv1.TaskTimers{StallAfter: durationpb.New(time.Hour)},
	}
}
