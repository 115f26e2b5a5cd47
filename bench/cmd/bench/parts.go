package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/open-policy-agent/opa/v1/ast"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/credential"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/services/governance/policy"
)

// The parts arms (p1)–(p3) each run, alone and with no Steward logic
// around it, a part of what a governed action of arm (b1) does under
// Steward's design as it stands and the floor (a) does not (p2 does (a)'s
// kind of work, so it stands in for (a), not beside it). Measured in the
// same rounds as (b1), what they cost together estimates how low (b1)'s
// CPU per action can go without a change to the design: it leaves out
// more that (b1) must do (canonicalising and hashing the action, building
// the policy input, authentication, task creation), so it errs low.

// runPartRPC is arm (p1): the one Connect call of (b1), ProposeAction with
// wait over HTTP/1.1 on loopback with a bearer token and (b1)'s deadline,
// answered at once by a handler that compresses no more than Steward's do
// (rpc.CompressMinBytes) with an action the size of (b1)'s answer.
func runPartRPC(o opts) (Result, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Result{}, err
	}
	mux := http.NewServeMux()
	mux.Handle(stewardv1connect.NewTaskServiceHandler(answerAtOnce{}, connect.WithCompressMinBytes(rpc.CompressMinBytes)))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: bearer{token: strings.Repeat("t", 32), next: &http.Transport{MaxIdleConnsPerHost: 64}}}
	c := stewardv1connect.NewTaskServiceClient(hc, "http://"+ln.Addr().String())
	params, _ := structpb.NewStruct(map[string]any{})
	one := func(w int) ([]time.Duration, int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		req := &stewardv1.ProposeActionRequest{TaskId: fmt.Sprintf("%032x", w), ProposalId: "p12", Tool: "noop", Params: params, Wait: true}
		if _, err := c.ProposeAction(ctx, connect.NewRequest(req)); err != nil {
			return nil, 0, err
		}
		return []time.Duration{time.Since(start)}, 1, nil
	}
	return phases(o.latencyN, o.throughputN, one, nil)
}

// answerAtOnce answers ProposeAction with a succeeded action of about the
// size of (b1)'s answers (1,613 bytes): its snapshot and signed permit.
type answerAtOnce struct {
	stewardv1connect.UnimplementedTaskServiceHandler
}

func (answerAtOnce) ProposeAction(_ context.Context, r *connect.Request[stewardv1.ProposeActionRequest]) (*connect.Response[stewardv1.ProposeActionResponse], error) {
	now := timestamppb.Now()
	hash := strings.Repeat("a", 64)
	return connect.NewResponse(&stewardv1.ProposeActionResponse{Action: &stewardv1.Action{
		ActionId: "act-" + r.Msg.TaskId, ProposalId: r.Msg.ProposalId, Tool: r.Msg.Tool, ToolVersion: "1",
		Status:     stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED,
		ActionHash: "sha256:" + hash, RequestHash: hash, OpKey: hash, RequestRef: "sha256:" + hash,
		Snapshot: &stewardv1.PolicySnapshot{
			SnapshotId: "snap-" + r.Msg.TaskId, BundleRevision: hash, InputHash: hash, InputKept: true,
			Reasons: []string{"benchmark: allow all"}, EvaluatedAt: now,
		},
		Permit: &stewardv1.ActionPermit{
			PermitId: "permit-" + r.Msg.TaskId, ActionId: "act-" + r.Msg.TaskId, ActionHash: "sha256:" + hash, RequestHash: hash,
			SnapshotId: "snap-" + r.Msg.TaskId, IssuedAt: now, ExpiresAt: now, SnapshotHash: hash,
		},
		SignedPermit: &stewardv1.SignedPermit{Permit: make([]byte, 572), Signature: make([]byte, 64), PublicKey: make([]byte, 32)},
		ProposedAt:   now, UpdatedAt: now, Attempt: 1,
	}}), nil
}

// The sizes of (b1)'s stored messages, in bytes: its four events and its
// policy input (measured on arm (b1)).
const (
	proposedBytes   = 572
	inputBytes      = 1689
	permittedBytes  = 1270
	dispatchedBytes = 312
	outcomeBytes    = 369
)

// runPartLog is arm (p2): the JetStream messages of a governed action of
// `steward dev` that its design as it stands needs, on the embedded server
// as (a)'s: five appends, each acknowledged (its four events, each
// conditional on its chain's last and carrying its id, and its policy
// input, which docs/audit.md keeps apart from the events); the delivery,
// and its acknowledgement, of each event a plane reacts to by deciding
// what comes next (governance the proposal, execution the permit, control
// the outcome); and the four events delivered to the projection's
// follower, which acknowledges nothing (other processes may write the
// log). Twenty messages, against (a)'s eighteen. (b1) sends about 29:
// these, the outcome's deliveries to governance and execution too (which
// act on an unknown or a charged outcome only), the rollout check's read,
// and task creation's share.
func runPartLog(o opts) (Result, error) {
	js, done, err := embeddedJetStream("bench-part-log-")
	if err != nil {
		return Result{}, err
	}
	defer done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for name, subjects := range map[string][]string{"PART": {"part.>"}, "PARTKV": {"partkv.>"}} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: subjects, Storage: jetstream.FileStorage}); err != nil {
			return Result{}, err
		}
	}
	l := &partLog{js: js, ctx: ctx}
	stop, err := l.start()
	defer stop()
	if err != nil {
		return Result{}, err
	}
	one := flowActions(&l.waiting, func(flow string) error {
		_, err := l.append(flow, "proposed", 0, proposedBytes)
		return err
	})
	return phases(o.latencyN, o.throughputN, one, nil)
}

// partLog is arm (p2)'s planes: each reacts on a goroutine of its own per
// message, as Steward's lanes work on different tasks at once.
type partLog struct {
	js      jetstream.JetStream
	ctx     context.Context
	waiting sync.Map // flow -> chan struct{}, closed when the follower has its outcome
}

// append stores an event of kind on flow's chain, conditional on its last
// being at sequence last, and returns its sequence.
func (l *partLog) append(flow, kind string, last uint64, size int) (uint64, error) {
	ack, err := l.js.PublishMsg(l.ctx, &nats.Msg{
		Subject: "part." + flow + "." + kind,
		Data:    make([]byte, size),
		Header: nats.Header{
			jetstream.MsgIDHeader:                   []string{flow + "-" + kind},
			jetstream.ExpectedLastSubjSeqHeader:     []string{fmt.Sprint(last)},
			jetstream.ExpectedLastSubjSeqSubjHeader: []string{"part." + flow + ".>"},
		},
	})
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// start runs the three planes' consumers and the follower; stop ends them.
func (l *partLog) start() (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	react := func(name, kind string, fn func(flow string, seq uint64) error) error {
		cc, err := reactEach(l.ctx, l.js, "PART", name, "part.*."+kind, func(m jetstream.Msg) error {
			meta, err := m.Metadata()
			if err != nil {
				return err
			}
			return fn(strings.Split(m.Subject(), ".")[1], meta.Sequence.Stream)
		})
		if err != nil {
			return err
		}
		stops = append(stops, cc.Stop)
		return nil
	}
	governance := func(flow string, seq uint64) error {
		if _, err := l.js.Publish(l.ctx, "partkv."+flow, make([]byte, inputBytes)); err != nil {
			return err
		}
		_, err := l.append(flow, "permitted", seq, permittedBytes)
		return err
	}
	execution := func(flow string, seq uint64) error {
		at, err := l.append(flow, "dispatched", seq, dispatchedBytes)
		if err == nil {
			_, err = l.append(flow, "outcome", at, outcomeBytes)
		}
		return err
	}
	control := func(string, uint64) error { return nil }
	for _, r := range []struct {
		name, kind string
		fn         func(string, uint64) error
	}{{"governance", "proposed", governance}, {"execution", "permitted", execution}, {"control", "outcome", control}} {
		if err := react(r.name, r.kind, r.fn); err != nil {
			return stop, err
		}
	}
	follower, err := l.js.OrderedConsumer(l.ctx, "PART", jetstream.OrderedConsumerConfig{FilterSubjects: []string{"part.>"}})
	if err != nil {
		return stop, err
	}
	fc, err := follower.Consume(func(m jetstream.Msg) {
		if flow, ok := strings.CutSuffix(strings.TrimPrefix(m.Subject(), "part."), ".outcome"); ok {
			if ch, ok := l.waiting.LoadAndDelete(flow); ok {
				close(ch.(chan struct{}))
			}
		}
	})
	if err != nil {
		return stop, err
	}
	stops = append(stops, fc.Stop)
	return stop, nil
}

// runPartJudge is arm (p3): governance's judgement of an allowed action
// without the policy input it builds: (b1)'s allow-all policy evaluated by
// OPA (which does not read the input), and the permit signed with Ed25519.
func runPartJudge(o opts) (Result, error) {
	dir, err := os.MkdirTemp("", "bench-part-judge-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "allow.rego"), []byte(allowAll), 0o600); err != nil {
		return Result{}, err
	}
	engine, err := policy.Load(context.Background(), dir)
	if err != nil {
		return Result{}, err
	}
	input, err := ast.InterfaceToValue(judgeInput())
	if err != nil {
		return Result{}, err
	}
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		return Result{}, err
	}
	signer := credential.NewSigner(key)
	one := func(w int) ([]time.Duration, int, error) {
		start := time.Now()
		res, err := engine.EvaluateValue(context.Background(), input)
		if err != nil || res.Decision != policy.Allow {
			return nil, 0, fmt.Errorf("policy: %v %v", res.Decision, err)
		}
		now := timestamppb.Now()
		if _, err := signer.SignPermit(&stewardv1.ActionPermit{
			PermitId: fmt.Sprintf("permit-%032x", w), ActionId: fmt.Sprintf("act-%032x", w), ActionHash: "sha256:" + strings.Repeat("a", 64),
			RequestHash: strings.Repeat("b", 64), SnapshotId: fmt.Sprintf("snap-%032x", w), CredentialRef: strings.Repeat("c", 40),
			IssuedAt: now, ExpiresAt: now, SnapshotHash: strings.Repeat("d", 64),
		}); err != nil {
			return nil, 0, err
		}
		return []time.Duration{time.Since(start)}, 1, nil
	}
	return phases(o.latencyN, o.throughputN, one, nil)
}

// judgeInput is a policy input shaped as governance's.
func judgeInput() map[string]any {
	id := strings.Repeat("0", 32)
	return map[string]any{
		"action": map[string]any{
			"action_id": "act-" + id, "tool": "noop", "tool_version": "1", "target": "", "effect_class": "EFFECT_CLASS_READ",
			"params": map[string]any{}, "request_hash": strings.Repeat("b", 64), "action_hash": "sha256:" + strings.Repeat("a", 64),
		},
		"task": map[string]any{
			"task_id": id, "tenant": "", "risk_tier": "RISK_TIER_LOW", "status": "TASK_STATUS_RUNNING",
			"intent": "benchmark: governed actions of a noop tool", "desired_outcome": "every action succeeds",
			"accountable_owner": "bench@example.com", "allowed_tools": []any{"noop"},
			"budget":      map[string]any{"max_cost_micros": 1000000, "max_tokens": 100000, "max_actions": 1000},
			"budget_used": map[string]any{"cost_micros": 0, "tokens": 0, "actions": 12},
		},
		"tool": map[string]any{
			"name": "noop", "version": "1", "effect_class": "EFFECT_CLASS_READ", "data_sensitivity": "DATA_SENSITIVITY_INTERNAL",
			"reversible": true, "idempotent": true, "egress": []any{},
		},
		"credential": map[string]any{
			"credential_id": strings.Repeat("c", 40), "subject": "agent", "expires_at": "2026-12-07T12:00:00Z",
			"scopes": []any{"tools:noop"}, "revoked": false,
		},
		"principal": map[string]any{"subject": "agent", "roles": []any{}, "tenant": ""},
	}
}
