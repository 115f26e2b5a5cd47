package rpc_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
)

// heavyTaskService answers CancelTask with task, as a change that has
// committed does.
type heavyTaskService struct {
	stewardv1connect.UnimplementedTaskServiceHandler
	task *stewardv1.Task
}

func (s heavyTaskService) CancelTask(context.Context, *connect.Request[stewardv1.CancelTaskRequest]) (*connect.Response[stewardv1.CancelTaskResponse], error) {
	return connect.NewResponse(&stewardv1.CancelTaskResponse{Task: s.task}), nil
}

// TestAChangeToAHeavyTaskIsAnsweredWithItsSummary: a change to a task
// whose answer would pass rpc.MaxResponseBytes — 9 MiB of plan in binary,
// or 2 MiB of control characters in JSON — is answered with the task's
// summary, not resource_exhausted after it committed.
func TestAChangeToAHeavyTaskIsAnsweredWithItsSummary(t *testing.T) {
	step := func(result string) *stewardv1.Task {
		return &stewardv1.Task{Contract: &stewardv1.TaskContract{TaskId: "t1"}, Plan: &stewardv1.PlanState{
			PlanHash: "h1", Steps: []*stewardv1.PlanStepState{{StepId: "s1", Result: structpb.NewStringValue(result)}}}}
	}
	for name, c := range map[string]struct {
		task *stewardv1.Task
		opts []connect.ClientOption
	}{
		"binary": {step(strings.Repeat("r", 9<<20)), nil},
		"json":   {step(strings.Repeat("\x01", 2<<20)), []connect.ClientOption{connect.WithProtoJSON()}},
	} {
		t.Run(name, func(t *testing.T) {
			path, h := stewardv1connect.NewTaskServiceHandler(heavyTaskService{task: c.task}, rpc.HandlerOptions(slog.New(slog.DiscardHandler), nil, nil)...)
			srv, err := rpc.Listen("127.0.0.1:0", []rpc.Service{{Name: stewardv1connect.TaskServiceName, Path: path, Handler: h}})
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = srv.Serve() }()
			t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
			// Uncompressed: Connect's send limit counts compressed bytes.
			opts := append(c.opts, connect.WithAcceptCompression("gzip", nil, nil))
			resp, err := stewardv1connect.NewTaskServiceClient(http.DefaultClient, srv.URL(), opts...).CancelTask(context.Background(), connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: "t1"}))
			if err != nil {
				t.Fatalf("CancelTask of a task too heavy for an answer: %v; want its summary", err)
			}
			if got := resp.Msg.Task; got.GetContract().GetTaskId() != "t1" || got.GetPlan().GetPlanHash() != "h1" || got.GetPlan().GetSteps()[0].GetResult() != nil {
				t.Fatalf("CancelTask answered %.200v; want the task's summary: its plan's steps without results", got)
			}
		})
	}
}
