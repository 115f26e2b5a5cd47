package e2e_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

func TestCreateIsIdempotentOnRequestID(t *testing.T) {
	c := newClients(startInProcess(t))
	ctx := context.Background()
	req := &stewardv1.CreateTaskRequest{RequestId: "same", Contract: contract()}
	first, err := c.tasks.CreateTask(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.tasks.CreateTask(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	if !first.Msg.Created || second.Msg.Created {
		t.Fatalf("created = %v then %v, want true then false", first.Msg.Created, second.Msg.Created)
	}
	if first.Msg.Task.Contract.TaskId != second.Msg.Task.Contract.TaskId {
		t.Fatal("the same request made two tasks")
	}
	other := contract()
	other.Intent = "something else"
	_, err = c.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "same", Contract: other}))
	if connect.CodeOf(err) != connect.CodeAlreadyExists {
		t.Fatalf("reused request id with another contract: %v, want AlreadyExists", err)
	}
	list, err := c.query.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Msg.Tasks) != 1 {
		t.Fatalf("%d tasks exist, want 1", len(list.Msg.Tasks))
	}
}

func TestBadInputIsRefusedAndNothingIsAppended(t *testing.T) {
	url := startInProcess(t)
	for _, proto := range []struct {
		name string
		opts []connect.ClientOption
	}{{"connect", nil}, {"grpc", []connect.ClientOption{connect.WithGRPC()}}} {
		t.Run(proto.name, func(t *testing.T) {
			c := newClients(url, proto.opts...)
			ctx := context.Background()
			cancelled := createTask(t, c, "cancelled-"+proto.name).Contract.TaskId
			waitStarted(t, c, cancelled)
			if _, err := c.tasks.CancelTask(ctx, connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: cancelled})); err != nil {
				t.Fatal(err)
			}
			with := func(f func(*stewardv1.TaskContract)) *stewardv1.CreateTaskRequest {
				k := contract()
				f(k)
				return &stewardv1.CreateTaskRequest{Contract: k}
			}
			tests := []struct {
				name  string
				call  func() error
				code  connect.Code
				field string
			}{
				{"no contract", create(c, &stewardv1.CreateTaskRequest{}), connect.CodeInvalidArgument, "contract"},
				{"no intent", create(c, with(func(k *stewardv1.TaskContract) { k.Intent = "" })), connect.CodeInvalidArgument, "contract.intent"},
				{"no requester", create(c, with(func(k *stewardv1.TaskContract) { k.RequesterRef = "" })), connect.CodeInvalidArgument, "contract.requester_ref"},
				{"negative budget", create(c, with(func(k *stewardv1.TaskContract) { k.Budget.MaxTokens = -1 })), connect.CodeInvalidArgument, "contract.budget.max_tokens"},
				{"deadline in the past", create(c, with(func(k *stewardv1.TaskContract) { k.Deadline = timestamppb.New(time.Now().Add(-time.Hour)) })), connect.CodeInvalidArgument, "contract.deadline"},
				{"unknown risk tier", create(c, with(func(k *stewardv1.TaskContract) { k.RiskTier = 42 })), connect.CodeInvalidArgument, "contract.risk_tier"},
				{"no risk tier", create(c, with(func(k *stewardv1.TaskContract) { k.RiskTier = 0 })), connect.CodeInvalidArgument, "contract.risk_tier"},
				{"long intent", create(c, with(func(k *stewardv1.TaskContract) { k.Intent = strings.Repeat("x", 5000) })), connect.CodeResourceExhausted, "contract.intent"},
				{"too many tools", create(c, with(func(k *stewardv1.TaskContract) { k.AllowedTools = make([]string, 300) })), connect.CodeResourceExhausted, "contract.allowed_tools"},
				{"oversized request", create(c, with(func(k *stewardv1.TaskContract) { k.DesiredOutcome = strings.Repeat("x", 2<<20) })), connect.CodeResourceExhausted, ""},
				{"unknown task", func() error {
					_, err := c.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "no-such-task"}))
					return err
				}, connect.CodeNotFound, ""},
				{"bad task id", func() error {
					_, err := c.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: "a.b"}))
					return err
				}, connect.CodeInvalidArgument, "task_id"},
				{"resume a cancelled task", func() error {
					_, err := c.tasks.ResumeTask(ctx, connect.NewRequest(&stewardv1.ResumeTaskRequest{TaskId: cancelled}))
					return err
				}, connect.CodeFailedPrecondition, ""},
				{"bad page token", func() error {
					_, err := c.query.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{PageToken: "nonsense"}))
					return err
				}, connect.CodeInvalidArgument, "page_token"},
				{"unknown status filter", func() error {
					_, err := c.query.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{Statuses: []stewardv1.TaskStatus{99}}))
					return err
				}, connect.CodeInvalidArgument, "statuses[0]"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					err := tt.call()
					if connect.CodeOf(err) != tt.code {
						t.Fatalf("err = %v, want code %v", err, tt.code)
					}
					if tt.field != "" && !strings.Contains(err.Error(), tt.field) {
						t.Fatalf("error %q does not name %s", err, tt.field)
					}
				})
			}
			// Only the one task of this subtest was created.
			list, err := c.query.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range list.Msg.Tasks {
				if tk.RequestId == "" {
					t.Fatalf("a refused request left task %v", tk)
				}
			}
			got, err := c.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: cancelled}))
			if err != nil {
				t.Fatal(err)
			}
			if got.Msg.Task.EventCount != 4 { // created, credential issued, started, cancelled; the refused resume added nothing
				t.Fatalf("cancelled task has %d events, want 4", got.Msg.Task.EventCount)
			}
		})
	}
}

func create(c clients, req *stewardv1.CreateTaskRequest) func() error {
	return func() error {
		_, err := c.tasks.CreateTask(context.Background(), connect.NewRequest(req))
		return err
	}
}

func TestMalformedRequestsAreInvalidArgument(t *testing.T) {
	url := startInProcess(t)
	for _, tt := range []struct{ contentType, body string }{
		{"application/json", `{"contract": {"intent": `},
		{"application/json", `[1,2,3]`},
		{"application/json", `{"contract": {"riskTier": {}}}`},
		{"application/proto", "\x12\xff\xff\xff\xff\x0f"}, // field 2, length past the end
		{"application/proto", "\xff"},
	} {
		resp, err := http.Post(url+"/steward.v1.TaskService/CreateTask", tt.contentType, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s body %q: HTTP %d, want 400 (invalid_argument)", tt.contentType, tt.body, resp.StatusCode)
		}
	}
}

func TestWatchReconnectHasNoGapAndNoDuplicate(t *testing.T) {
	c := newClients(startInProcess(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	taskID := createTask(t, c, "watch-1").Contract.TaskId
	waitStarted(t, c, taskID)

	// First connection: read two events, then drop.
	stream, err := c.query.WatchTask(ctx, connect.NewRequest(&stewardv1.WatchTaskRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	var seen []uint64
	for len(seen) < 2 && stream.Receive() {
		if r := stream.Msg().Record; r != nil {
			seen = append(seen, r.Sequence)
		}
	}
	stream.Close()

	// Meanwhile the task moves on.
	for range 3 {
		if _, err := c.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: taskID})); err != nil {
			t.Fatal(err)
		}
		if _, err := c.tasks.ResumeTask(ctx, connect.NewRequest(&stewardv1.ResumeTaskRequest{TaskId: taskID})); err != nil {
			t.Fatal(err)
		}
	}

	// Reconnect after the last sequence seen; follow to the end.
	stream, err = c.query.WatchTask(ctx, connect.NewRequest(&stewardv1.WatchTaskRequest{TaskId: taskID, AfterSequence: seen[len(seen)-1]}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	for len(seen) < 9 && stream.Receive() { // created, credential issued, started, 3 × (paused, resumed)
		if r := stream.Msg().Record; r != nil {
			seen = append(seen, r.Sequence)
		}
	}
	timeline, err := c.query.GetTimeline(ctx, connect.NewRequest(&stewardv1.GetTimelineRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	var want []uint64
	for _, e := range timeline.Msg.Entries {
		want = append(want, e.Sequence)
	}
	if len(seen) != len(want) {
		t.Fatalf("watched %v, log has %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("watched %v, log has %v", seen, want)
		}
	}
	if !strings.Contains(timeline.Msg.Entries[3].Summary, "paused the task") {
		t.Fatalf("timeline entry reads %q", timeline.Msg.Entries[3].Summary)
	}
}

func TestWatchUnknownTaskIsNotFound(t *testing.T) {
	c := newClients(startInProcess(t))
	stream, err := c.query.WatchTask(context.Background(), connect.NewRequest(&stewardv1.WatchTaskRequest{TaskId: "nope"}))
	if err == nil {
		for stream.Receive() {
		}
		err = stream.Err()
	}
	var cerr *connect.Error
	if !errors.As(err, &cerr) || cerr.Code() != connect.CodeNotFound {
		t.Fatalf("err = %v, want NotFound", err)
	}
}
