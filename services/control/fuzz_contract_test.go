package control

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/limits"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// FuzzCreateTask checks task contracts as CreateTask receives them:
// decoded by the edge's strict codec and passed by its limits. A refused
// request is refused naming one of its fields. An accepted one is
// accepted again after a trip through JSON, and what CreateTask then
// records is a legal first step: its TaskCreated seals and opens, the
// fold takes it, and the task it folds to encodes for every client.
func FuzzCreateTask(f *testing.F) {
	for _, body := range stewardtest.BadRequestsFor(f, "/CreateTask", 4<<10) {
		f.Add(body)
	}
	for _, c := range []string{
		`{"requestId": "r1", "contract": {"intent": "tidy", "desiredOutcome": "tidy", "requesterRef": "alice", "accountableOwnerRef": "alice", "riskTier": "RISK_TIER_LOW"}}`,
		`{"contract": {"intent": "i", "desiredOutcome": "o", "requesterRef": "alice", "accountableOwnerRef": "alice", "acceptanceOwnerRef": "carol", "authorizerRef": "bob", "separationOfDuties": true, "riskTier": "RISK_TIER_HIGH", "allowedTools": ["w@1", "search"], "scopes": ["repo:x"], "budget": {"maxTokens": "100", "maxCostMicros": "5", "currency": "EUR", "milestones": [{"milestoneId": "m", "maxTokens": "50"}]}, "deadline": "2030-01-01T00:00:00Z", "acceptanceCriteria": [{"id": "c", "expression": "artifacts.report.size > 0"}, {"id": "r", "requiresReviewer": true}], "recoveryPolicy": {"mode": "RECOVERY_MODE_RETRY", "maxAttempts": 2}, "limits": {"maxActions": 10}, "timers": {"approvalRemindAfter": "3600s", "approvalSuspendAfter": "7200s", "stallAfter": "600s"}, "contextRefs": [{"uri": "https://x/y", "digest": "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}]}}`,
	} {
		f.Add(c)
	}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body string) {
		var req stewardv1.CreateTaskRequest
		if rpc.Decode("json", []byte(body), &req) != nil || limits.Check(req.ProtoReflect()) != nil {
			return
		}
		if err := validateCreate(&req, now); err != nil {
			var e *errs.Error
			if !errors.As(err, &e) || e.Field == "" {
				t.Fatalf("refused without naming a field: %v", err)
			}
			return
		}
		if err := validateCreate(stewardtest.SameAfterJSON(t, &req), now); err != nil {
			t.Fatalf("accepted, then refused after a trip through JSON: %v", err)
		}
		if checkDuties(req.Contract, "fuzz-creator", "") != nil {
			return
		}
		created(t, &req, now)
	})
}

// created records req's task as CreateTask does and folds it.
func created(t *testing.T, req *stewardv1.CreateTaskRequest, now time.Time) {
	t.Helper()
	contract, err := knownFieldsOnly(req.Contract)
	if err != nil || !proto.Equal(contract, req.Contract) {
		t.Fatalf("the strict codec let through fields CreateTask drops: %v", err)
	}
	taskID := TaskIDFor("fuzz-creator", req.RequestId)
	contract.TaskId = taskID
	ev, err := event.New(event.Meta{
		ID: event.ID(taskID, event.TypeTaskCreated), TaskID: taskID, Time: now,
		Actor: &stewardv1.Actor{Principal: "fuzz-creator", Plane: event.Owner(event.TypeTaskCreated)},
	}, &stewardv1.TaskCreated{Contract: contract, RequestId: req.RequestId})
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := event.Seal(ev, nil)
	if err != nil {
		t.Fatalf("an accepted contract does not seal: %v", err)
	}
	opened, err := event.Open(sealed)
	if err != nil {
		t.Fatalf("an accepted contract's TaskCreated does not open: %v", err)
	}
	var tk stewardv1.Task
	if err := task.Apply(&tk, opened, 1); err != nil {
		t.Fatalf("accepted, but the fold refuses its TaskCreated: %v", err)
	}
	if _, err := protojson.Marshal(&tk); err != nil {
		t.Fatalf("accepted, but the task does not encode as JSON: %v", err)
	}
}
