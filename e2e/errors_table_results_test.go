package e2e_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/toolreg"
)

// contentChecks are the rows of the errors table about a contract's
// context and inputs, a tool's idempotency fields, and reading content
// back.
func contentChecks() map[string]tableCheck {
	ctx := context.Background()
	readArtifact := func(c authed, taskID, name string, version uint32) error {
		return drain(c.query.GetArtifactContent(ctx, connect.NewRequest(&stewardv1.GetArtifactContentRequest{TaskId: taskID, Name: name, Version: version})))
	}
	replay := func(c authed, taskID string) error {
		return drain(c.audit.ReplayTask(ctx, connect.NewRequest(&stewardv1.ReplayTaskRequest{TaskId: taskID})))
	}
	submit := func(t *testing.T, e *harness, req *stewardv1.SubmitArtifactRequest) {
		t.Helper()
		if _, err := e.agent.tasks.SubmitArtifact(ctx, connect.NewRequest(req)); err != nil {
			t.Fatal(err)
		}
	}
	return map[string]tableCheck{
		"a context ref or input (`contract.contextRefs[i]`, `contract.inputSnapshot.inputs[i]`) without an absolute `uri`, or with a `digest` that is not `sha256:` and 64 lowercase hex digits": func(t *testing.T, e *harness) []error {
			create := func(requestID string, edit func(*stewardv1.TaskContract)) error {
				k := contract()
				edit(k)
				_, err := e.agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: k}))
				return err
			}
			ok := &stewardv1.ContextRef{Uri: "s3://kb/runbook.md"}
			return []error{alike(t,
				onField(t, create("table-ctx-1", func(k *stewardv1.TaskContract) {
					k.ContextRefs = []*stewardv1.ContextRef{ok, {Uri: "runbook.md"}}
				}), "contract.context_refs[1].uri"),
				onField(t, create("table-ctx-2", func(k *stewardv1.TaskContract) {
					k.ContextRefs = []*stewardv1.ContextRef{ok, ok, {Uri: "s3://kb/x", Digest: strings.Repeat("ab", 32)}}
				}), "contract.context_refs[2].digest"),
				onField(t, create("table-ctx-3", func(k *stewardv1.TaskContract) {
					k.InputSnapshot = &stewardv1.InputSnapshot{Inputs: []*stewardv1.ContextRef{{Uri: "s3://kb/x", Digest: "sha256:abc"}}}
				}), "contract.input_snapshot.inputs[0].digest"),
			)}
		},
		"a tool's `idempotency.keyScope` other than `action`, or `onRepeat` other than `return_first`; either, or a `retention`, on a tool that does not honour its key": func(t *testing.T, e *harness) []error {
			register := func(idem *stewardv1.IdempotencySupport) error {
				return registerEdited(e, "table-idempotent", func(c *stewardv1.ToolContract) { c.Idempotency = idem })
			}
			return []error{alike(t,
				onField(t, register(&stewardv1.IdempotencySupport{HonoursKey: true, KeyScope: "per-tool"}), "contract.idempotency.key_scope"),
				onField(t, register(&stewardv1.IdempotencySupport{HonoursKey: true, OnRepeat: "the first result"}), "contract.idempotency.on_repeat"),
				onField(t, register(&stewardv1.IdempotencySupport{OnRepeat: "return_first"}), "contract.idempotency.on_repeat"),
			)}
		},
		"a tool's `limits` out of its range (see the limits below), a `burst` without a `ratePerSecond`, `perTenant` without a cap or a rate, or on a tenant's tool": func(t *testing.T, e *harness) []error {
			register := func(l *stewardv1.ToolLimits) error {
				return registerEdited(e, "table-limited", func(c *stewardv1.ToolContract) { c.Limits = l })
			}
			return []error{alike(t,
				onField(t, register(&stewardv1.ToolLimits{MaxConcurrent: toolreg.MaxConcurrentCalls + 1}), "contract.limits.max_concurrent"),
				onField(t, register(&stewardv1.ToolLimits{Burst: 2}), "contract.limits.burst"),
				onField(t, register(&stewardv1.ToolLimits{PerTenant: true}), "contract.limits.per_tenant"),
			)}
		},
		"`GetResult` for an action without a result; `GetArtifactContent` for an unknown artifact or version; for an artifact submitted by reference": func(t *testing.T, e *harness) []error {
			ap := e.pendingApproval(t)
			_, noResult := e.agent.query.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: ap.TaskId, ActionId: ap.ActionId}))
			id := e.create(t, "table-content-refs", contract())
			submit(t, e, &stewardv1.SubmitArtifactRequest{TaskId: id, RequestId: "table-by-ref", Name: "dump", MediaType: "text/csv",
				Uri: "s3://bucket/dump.csv", Sha256: strings.Repeat("ab", 32), SizeBytes: 10})
			byRef := readArtifact(e.agent, id, "dump", 0)
			return []error{
				saying(t, noResult, "has no result"),
				alike(t, readArtifact(e.agent, id, "report", 0), readArtifact(e.agent, id, "dump", 2)),
				saying(t, byRef, "s3://bucket/dump.csv"),
			}
		},
		"`GetResult`, `GetArtifactContent`, `WatchTask` or `ReplayTask` by a principal the task does not name, without the `operator` or `auditor` role": func(t *testing.T, e *harness) []error {
			id := e.governed(t)
			_, err := e.viewer.query.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: id, ActionId: "any"}))
			return []error{alike(t, err, readArtifact(e.viewer, id, "report", 0), watchFirst(ctx, e.viewer.query, id), replay(e.viewer, id))}
		},
		"a result or artifact whose stored bytes no longer hash to what the log recorded": func(t *testing.T, e *harness) []error {
			id := e.create(t, "table-content-corrupt", contract())
			content := []byte("the table's report, as submitted")
			submit(t, e, &stewardv1.SubmitArtifactRequest{TaskId: id, RequestId: "table-corrupt", Name: "report", MediaType: "text/plain", Content: content})
			js, _ := e.events(t)
			overwriteBlob(t, js, action.Ref(action.ResultBucket, id, action.RequestHash(content)), []byte("the table's report, as changed!!"))
			return []error{readArtifact(e.agent, id, "report", 0)}
		},
	}
}

// registerEdited registers tool name, an idempotent write of public data
// at an address nothing serves, as edit leaves its contract: for the rows
// about what a contract may say.
func registerEdited(e *harness, name string, edit func(*stewardv1.ToolContract)) error {
	c := &stewardv1.ToolContract{
		Name: name, Version: "1.0.0", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE,
		DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_PUBLIC,
		Endpoint:        &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: "http://127.0.0.1:1/x"}},
	}
	edit(c)
	_, err := e.tools().RegisterTool(context.Background(), connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: c}))
	return err
}
