package requestid_test

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
)

// TestCommandNames pins every command name, written out: the names are in
// the ids a request id derives (Scope.EventID, the first use a claim
// records), so renaming one would make a command retried across the
// upgrade a second command.
func TestCommandNames(t *testing.T) {
	want := []string{
		"CreateTask", "PauseTask", "ResumeTask", "CancelTask", "FailTask", "ReportUsage", "RaiseBudget",
		"DelegateTask", "SubmitPlan", "SubmitArtifact", "MarkProduced", "AcceptTask", "ReturnTask",
		"RequestInput", "ProvideInput", "ExtendDeadline", "RenewCredential", "RecordFinding", "ForkTask",
		"ReviseContract", "DecideContractRevision",
		"CreateSchedule",
		"CreateObjective",
	}
	if got := requestid.Commands(); !slices.Equal(got, want) {
		t.Errorf("Commands() = %q\nwant          %q", got, want)
	}
}

// TestEveryRequestIDHasACommand: the RPCs whose request has a request_id
// field, found in the services' descriptors, are exactly the commands: a
// new RPC with a request id needs its name declared, and no name is
// declared that no RPC uses. (ProposeAction's proposal_id is the action's
// own id, not a request id: the action on the task's log is its record.)
func TestEveryRequestIDHasACommand(t *testing.T) {
	_ = stewardv1.File_steward_v1_task_service_proto // the services are registered
	var rpcs []string
	protoregistry.GlobalFiles.RangeFilesByPackage("steward.v1", func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			methods := f.Services().Get(i).Methods()
			for j := range methods.Len() {
				m := methods.Get(j)
				if m.Input().Fields().ByName("request_id") != nil {
					rpcs = append(rpcs, string(m.Name()))
				}
			}
		}
		return true
	})
	if len(rpcs) == 0 {
		t.Fatal("no RPC takes a request id: the services are not registered")
	}
	commands := requestid.Commands()
	for _, rpc := range rpcs {
		if !slices.Contains(commands, rpc) {
			t.Errorf("RPC %s takes a request_id but is not a requestid command", rpc)
		}
	}
	for _, c := range commands {
		if !slices.Contains(rpcs, c) {
			t.Errorf("command %s is declared, but no RPC of that name takes a request_id", c)
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(commands)))) != len(commands) {
		t.Errorf("a command is declared twice: %q", commands)
	}
}
