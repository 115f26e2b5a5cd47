package rpc

import (
	"errors"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"

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
		{"not an object", &stewardv1.CreateTaskRequest{}, `[1]`, "", "request is not valid JSON at line 1, column 1: unexpected token ["},
		{"cut short", &stewardv1.CreateTaskRequest{}, `{"contract": {`, "", "request is not valid JSON: it ends early"},
		{"empty", &stewardv1.GetTaskRequest{}, ``, "", "request is empty; a JSON object is required (send {} for an empty request)"},
		{"unknown field echoed short", &stewardv1.GetTaskRequest{}, `{"` + longKey + `": 1}`,
			longKey[:maxEcho] + "…", ""},
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
