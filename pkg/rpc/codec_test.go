package rpc

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestJSONRefusalsNameTheFieldAndValue checks the wording of what the
// strict JSON codec refuses, starting from the typos an outside test
// found silently dropped.
func TestJSONRefusalsNameTheFieldAndValue(t *testing.T) {
	for _, tt := range []struct {
		name  string
		msg   proto.Message
		body  string
		field string
		want  string
	}{
		{"misspelt sensitivity", &stewardv1.RegisterToolRequest{}, `{"contract": {"name": "w", "dataSensitivity": "DATA_SENSITIVITY_RESTRICTD"}}`,
			"contract.data_sensitivity", `contract.data_sensitivity: "DATA_SENSITIVITY_RESTRICTD" is not a steward.v1.DataSensitivity; use one of DATA_SENSITIVITY_PUBLIC, DATA_SENSITIVITY_INTERNAL, DATA_SENSITIVITY_CONFIDENTIAL, DATA_SENSITIVITY_RESTRICTED`},
		{"misspelt budget field", &stewardv1.CreateTaskRequest{}, `{"contract": {"budget": {"maxToken": "50"}}}`,
			"contract.budget.maxToken", `contract.budget.maxToken: is not a field of steward.v1.Budget (did you mean maxTokens?)`},
		{"misspelt status in a list", &stewardv1.ListTasksRequest{}, `{"statuses": ["TASK_STATUS_RUNNING", "TASK_STATUS_RUNING"]}`,
			"statuses[1]", ""},
		{"misspelt risk tier", &stewardv1.CreateTaskRequest{}, `{"contract": {"riskTier": "RISK_TIER_HGH"}}`,
			"contract.risk_tier", ""},
		{"undefined enum number", &stewardv1.RegisterToolRequest{}, `{"contract": {"dataSensitivity": 9}}`,
			"contract.data_sensitivity", ""},
		{"wrong type", &stewardv1.GetTaskRequest{}, `{"taskId": 5}`,
			"task_id", "task_id: 5 is not a valid string"},
		{"wrong type deep in a list", &stewardv1.CreateTaskRequest{}, "{\"contract\":\n {\"scopes\": [\"a\", 1]}}",
			"contract.scopes[1]", ""},
		{"duplicate field", &stewardv1.CreateTaskRequest{}, `{"contract": {"intent": "a", "intent": "b"}}`,
			"contract.intent", "contract.intent: appears twice"},
		{"syntax error inside a field", &stewardv1.CreateTaskRequest{}, `{"contract": {"intent": }}`,
			"contract.intent", ""},
		{"not an object", &stewardv1.CreateTaskRequest{}, `[1]`, "", "request must be a JSON object, not a JSON array"},
		{"cut short", &stewardv1.CreateTaskRequest{}, `{"contract": {`, "", "request is not valid JSON: it ends early"},
		{"empty", &stewardv1.GetTaskRequest{}, ``, "", "request is empty; a JSON object is required (send {} for an empty request)"},
		{"unknown field echoed short", &stewardv1.GetTaskRequest{}, `{"` + longKey + `": 1}`,
			longKey[:maxEcho] + "…", ""},
		{"a value with a colon in it", &stewardv1.ListTasksRequest{}, `{"statuses": ["TASK_STATUS_RUNNING", "x: y"]}`,
			"statuses[1]", `statuses[1]: "x: y" is not a steward.v1.TaskStatus; use one of TASK_STATUS_PENDING, TASK_STATUS_RUNNING, TASK_STATUS_WAITING_FOR_APPROVAL, TASK_STATUS_WAITING_FOR_INPUT, TASK_STATUS_PAUSED, TASK_STATUS_RECONCILING, TASK_STATUS_COMPENSATING, TASK_STATUS_SUSPENDED, TASK_STATUS_PRODUCED, TASK_STATUS_ACCEPTED, TASK_STATUS_FAILED, TASK_STATUS_CANCELLED`},
		{"the wrong JSON type", &stewardv1.CreateTaskRequest{}, `{"contract": {"deadline": {"seconds": 1}}}`,
			"contract.deadline", "contract.deadline: does not take a JSON object"},
		{"null for the whole request", &stewardv1.CreateTaskRequest{}, `null`, "", "request must be a JSON object, not null"},
		{"control characters in a key", &stewardv1.GetTaskRequest{}, "{\"\\u001b[31mred\": 1}", `\u001b[31mred`, ""},
		{"not JSON at all", &stewardv1.CreateTaskRequest{}, `{"contract": {"intent": }}x`, "contract.intent", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := (jsonCodec{}).Unmarshal([]byte(tt.body), tt.msg); err != nil {
				t.Fatal(err)
			}
			err := refusal(tt.msg)
			var cerr *connect.Error
			if !errors.As(err, &cerr) || cerr.Code() != connect.CodeInvalidArgument {
				t.Fatalf("got %v, want invalid_argument", err)
			}
			if tt.want != "" && cerr.Message() != tt.want {
				t.Errorf("message\n got %s\nwant %s", cerr.Message(), tt.want)
			}
			t.Log(cerr.Message())
			if got := violated(cerr); got != tt.field {
				t.Errorf("field %q, want %q (%s)", got, tt.field, cerr.Message())
			}
		})
	}
}

var longKey = "k" + string(bytesOf('x', 4000))

func bytesOf(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// violated returns the field a BadRequest detail of err names, or "".
func violated(err *connect.Error) string {
	for _, d := range err.Details() {
		if v, derr := d.Value(); derr == nil {
			if br, ok := v.(*errdetails.BadRequest); ok && len(br.FieldViolations) > 0 {
				return br.FieldViolations[0].Field
			}
		}
	}
	return ""
}

// TestStrictCodecsAcceptWhatIsDefined checks that strictness costs a
// correct request nothing: it decodes as before, with nothing left over.
func TestStrictCodecsAcceptWhatIsDefined(t *testing.T) {
	want := &stewardv1.ListTasksRequest{Statuses: []stewardv1.TaskStatus{stewardv1.TaskStatus_TASK_STATUS_RUNNING}, PageSize: 5}
	bin, _ := proto.Marshal(want)
	for name, c := range map[string]connect.Codec{"json": jsonCodec{}, "proto": protoCodec{}} {
		body := []byte(`{"statuses": ["TASK_STATUS_RUNNING"], "page_size": 5}`)
		if name == "proto" {
			body = bin
		}
		got := &stewardv1.ListTasksRequest{}
		if err := c.Unmarshal(body, got); err != nil {
			t.Fatal(err)
		}
		if err := refusal(got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !proto.Equal(got, want) {
			t.Errorf("%s: decoded %v, want %v", name, got, want)
		}
	}
}

// TestPrincipalHeader checks the rules for a caller's self-chosen name.
func TestPrincipalHeader(t *testing.T) {
	for _, tt := range []struct {
		values []string
		want   string
		ok     bool
	}{
		{nil, "", true},
		{[]string{"  "}, "", true},
		{[]string{" user:ana "}, "user:ana", true},
		{[]string{"user:\xff"}, "", false},
		{[]string{string(bytesOf('a', MaxPrincipalLen+1))}, "", false},
		{[]string{"steward"}, "", false},
		{[]string{"Anonymous"}, "", false},
		{[]string{"user:\x1bc"}, "", false},
		{[]string{"user:\u202eana"}, "", false},
		{[]string{"a", "b"}, "", false},
	} {
		got, err := principalFrom(tt.values)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("%q: got %q, %v", tt.values, got, err)
		}
	}
}

// TestDeepNestingIsRefusedCheaply: a small request nested thousands deep
// once cost gigabytes and seconds before authentication ran, as the walk
// built a path string at every level. It is refused at MaxMessageDepth, in JSON
// and binary, for little memory.
func TestDeepNestingIsRefusedCheaply(t *testing.T) {
	const depth = 5000
	jsonBody := `{"params": {"a": ` + strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth) + `}}`
	v := structpb.NewNumberValue(1)
	for range depth {
		v = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{v}})
	}
	binBody, err := proto.Marshal(&stewardv1.ProposeActionRequest{Params: &structpb.Struct{Fields: map[string]*structpb.Value{"a": v}}})
	if err != nil {
		t.Fatal(err)
	}
	for name, tt := range map[string]struct {
		codec connect.Codec
		body  []byte
	}{"json": {jsonCodec{}, []byte(jsonBody)}, "proto": {protoCodec{}, binBody}} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		msg := &stewardv1.ProposeActionRequest{}
		if err := tt.codec.Unmarshal(tt.body, msg); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if connect.CodeOf(refusal(msg)) != connect.CodeInvalidArgument {
			t.Errorf("%s: %d levels were not refused: %v", name, depth, refusal(msg))
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
			t.Errorf("%s: refusing a %d-byte body allocated %d MB", name, len(tt.body), grew>>20)
		}
	}
}

// TestLegitimateNestingIsAccepted: parameters a few dozen levels deep, as
// real tools take, decode, and a violation deep inside is named cheaply.
func TestLegitimateNestingIsAccepted(t *testing.T) {
	body := `{"params": {"a": ` + strings.Repeat(`{"b": `, 40) + "1" + strings.Repeat("}", 40) + `}}`
	msg := &stewardv1.ProposeActionRequest{}
	if err := (jsonCodec{}).Unmarshal([]byte(body), msg); err != nil || refusal(msg) != nil {
		t.Fatalf("40 levels of parameters: %v %v", err, refusal(msg))
	}
}
