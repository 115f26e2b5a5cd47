package e2e_test

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestGRPCClient drives Steward with grpc-go, a real gRPC client with no
// Connect code in it: reflection, a unary call and a server stream.
func TestGRPCClient(t *testing.T) {
	url := startInProcess(t)
	taskID := createTask(t, newClients(url, connect.WithGRPC()), "grpc-1").Contract.TaskId

	conn, err := grpc.NewClient(strings.TrimPrefix(url, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Reflection lists the services.
	refl, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := refl.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := refl.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.Name)
	}
	for _, want := range []string{"steward.v1.TaskService", "steward.v1.QueryService", "steward.v1.AuditService"} {
		if !slices.Contains(names, want) {
			t.Errorf("reflection lists %v; %s is missing", names, want)
		}
	}

	// Unary.
	got := &stewardv1.GetTaskResponse{}
	if err := conn.Invoke(ctx, "/steward.v1.QueryService/GetTask", &stewardv1.GetTaskRequest{TaskId: taskID}, got); err != nil {
		t.Fatal(err)
	}
	if got.Task.Contract.TaskId != taskID {
		t.Fatalf("GetTask returned %v", got.Task)
	}

	// Server streaming.
	st, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/steward.v1.QueryService/WatchTask")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SendMsg(&stewardv1.WatchTaskRequest{TaskId: taskID}); err != nil {
		t.Fatal(err)
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	opening, first := &stewardv1.WatchTaskResponse{}, &stewardv1.WatchTaskResponse{}
	if err := st.RecvMsg(opening); err != nil {
		t.Fatal(err)
	}
	if err := st.RecvMsg(first); err != nil {
		t.Fatal(err)
	}
	if first.Record.Event.Type != "task.created" {
		t.Fatalf("first watched event is %s", first.Record.Event.Type)
	}
}

// TestGRPCurl runs grpcurl against the server (./scripts/tools installs
// it into .bin; under CI=true it must be there).
func TestGRPCurl(t *testing.T) {
	grpcurl := pinnedTool(t, "grpcurl")
	url := startInProcess(t)
	addr := strings.TrimPrefix(url, "http://")
	taskID := createTask(t, newClients(url), "grpcurl-1").Contract.TaskId

	out, err := exec.Command(grpcurl, "-plaintext", addr, "list").CombinedOutput()
	if err != nil {
		t.Fatalf("grpcurl list: %v\n%s", err, out)
	}
	for _, want := range []string{"steward.v1.TaskService", "steward.v1.QueryService", "steward.v1.AuditService"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("grpcurl list lacks %s:\n%s", want, out)
		}
	}
	out, err = exec.Command(grpcurl, "-plaintext", "-d", `{"task_id":"`+taskID+`"}`, addr, "steward.v1.QueryService/GetTask").CombinedOutput()
	if err != nil {
		t.Fatalf("grpcurl GetTask: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), taskID) {
		t.Fatalf("grpcurl GetTask:\n%s", out)
	}
}
