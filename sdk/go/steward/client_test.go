package steward_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/sdk/go/steward"
)

// TestTheSDKStandsAlone: the SDK pulls in none of the server's packages —
// only the generated stubs — so an agent built on it carries no server.
func TestTheSDKStandsAlone(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/steward-run/steward/sdk/go/steward").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/steward-run/steward/") && !strings.HasPrefix(pkg, "github.com/steward-run/steward/pkg/gen/") &&
			!strings.HasPrefix(pkg, "github.com/steward-run/steward/sdk/") {
			t.Errorf("the SDK depends on %s, one of the server's packages", pkg)
		}
	}
}

// proxy stands between a client and Steward, forwarding each call; for
// the calls whose path drop names, it forwards the first and then drops
// Steward's answer (the connection closes unanswered), as a network that
// fails after the command committed does.
type proxy struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

func startProxy(t *testing.T, drop string) *proxy {
	p := &proxy{calls: map[string]int{}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.calls[r.URL.Path]++
		n := p.calls[r.URL.Path]
		p.mu.Unlock()
		resp := forward(w, r)
		if resp == nil {
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if r.URL.Path == drop && n == 1 {
			panic(http.ErrAbortHandler) // Steward did it; the caller never hears
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(body)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *proxy) count(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[path]
}

func quick() steward.Option {
	return steward.WithRetry(steward.Retry{Attempts: 5, First: 10 * time.Millisecond, Max: 100 * time.Millisecond})
}

// TestALostAnswerIsOneAction: the answer to a ProposeAction that Steward
// committed is lost on the way back; the SDK sends the same proposal
// again, and the task has one action, not two.
func TestALostAnswerIsOneAction(t *testing.T) {
	ctx := context.Background()
	direct := steward.New(stewardURL, steward.WithToken(agentToken))
	task, err := direct.CreateTask(ctx, &stewardv1.CreateTaskRequest{Contract: contract("Look a customer up once")})
	if err != nil {
		t.Fatal(err)
	}
	const path = "/steward.v1.TaskService/ProposeAction"
	p := startProxy(t, path)
	c := steward.New(p.URL, steward.WithToken(agentToken), quick())
	params, _ := structpb.NewStruct(map[string]any{"customer": "c-7"})
	a, err := c.ProposeAndWait(ctx, &stewardv1.ProposeActionRequest{TaskId: task.Contract.TaskId, Tool: "lookup", Params: params})
	if err != nil {
		t.Fatal(err)
	}
	got, err := direct.GetTask(ctx, task.Contract.TaskId)
	if err != nil {
		t.Fatal(err)
	}
	if p.count(path) != 2 || len(got.Actions) != 1 || a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		t.Errorf("proposed %d times through a lost answer: %d actions, the last %s; want 2 sends and 1 action, succeeded", p.count(path), len(got.Actions), a.Status)
	}
}

// TestARefusalIsNotSentAgain: bad input is refused once and comes back
// as an *Error naming the field, never retried.
func TestARefusalIsNotSentAgain(t *testing.T) {
	p := startProxy(t, "")
	c := steward.New(p.URL, steward.WithToken(agentToken), quick())
	k := contract("Refused")
	k.Budget.MaxTokens = -1
	_, err := c.CreateTask(context.Background(), &stewardv1.CreateTaskRequest{Contract: k})
	e, ok := err.(*steward.Error)
	if !ok || e.Code != connect.CodeInvalidArgument || e.Field != "contract.budget.max_tokens" || steward.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("a negative budget: %v, want invalid_argument naming contract.budget.max_tokens", err)
	}
	if n := p.count("/steward.v1.TaskService/CreateTask"); n != 1 {
		t.Errorf("a refusal was sent %d times, want 1", n)
	}
}

// TestWatchGoesOnAfterABreak: a watch whose stream breaks after its first
// event opens again from there: every event once, in order.
func TestWatchGoesOnAfterABreak(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	direct := steward.New(stewardURL, steward.WithToken(agentToken))
	task, err := direct.CreateTask(ctx, &stewardv1.CreateTaskRequest{Contract: contract("Watched")})
	if err != nil {
		t.Fatal(err)
	}
	params, _ := structpb.NewStruct(map[string]any{"customer": "c-9"})
	if _, err := direct.ProposeAndWait(ctx, &stewardv1.ProposeActionRequest{TaskId: task.Contract.TaskId, Tool: "lookup", Params: params}); err != nil {
		t.Fatal(err)
	}
	all, err := direct.GetTask(ctx, task.Contract.TaskId)
	if err != nil {
		t.Fatal(err)
	}
	var opens atomic.Int32
	breaker := httptest.NewServer(cutFirstWatch(&opens))
	t.Cleanup(breaker.Close)
	var seen []uint64
	err = steward.New(breaker.URL, steward.WithToken(agentToken), quick()).Watch(ctx, task.Contract.TaskId, 0, func(rec *stewardv1.EventRecord) error {
		seen = append(seen, rec.Sequence)
		if rec.Sequence == all.LastSequence {
			return steward.ErrStopWatching
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if opens.Load() != 2 || len(seen) != int(all.EventCount) {
		t.Fatalf("saw %d events through a watch opened %d times, want the task's %d through 2: %v", len(seen), opens.Load(), all.EventCount, seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] <= seen[i-1] {
			t.Fatalf("events out of order or twice: %v", seen)
		}
	}
}

// cutFirstWatch forwards to Steward, but breaks the first WatchTask
// stream after its second message (the first event after the live mark).
func cutFirstWatch(opens *atomic.Int32) http.Handler {
	var once sync.Once
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp := forward(w, r)
		if resp == nil {
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		cut := false
		if strings.HasSuffix(r.URL.Path, "/WatchTask") {
			opens.Add(1)
			once.Do(func() { cut = true })
		}
		for n := 0; ; n++ {
			var head [5]byte // a Connect envelope: flags, then the length
			if _, err := io.ReadFull(resp.Body, head[:]); err != nil {
				return
			}
			msg := make([]byte, binary.BigEndian.Uint32(head[1:]))
			if _, err := io.ReadFull(resp.Body, msg); err != nil {
				return
			}
			if cut && n == 2 {
				panic(http.ErrAbortHandler)
			}
			_, _ = io.Copy(w, bytes.NewReader(append(head[:], msg...)))
			w.(http.Flusher).Flush()
		}
	})
}

// forward sends r on to Steward and returns its answer; nil when Steward
// could not be reached, which w is told.
func forward(w http.ResponseWriter, r *http.Request) *http.Response {
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, stewardURL+r.URL.Path, r.Body)
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return nil
	}
	return resp
}

// TestKeepAliveHeartbeats: KeepAlive heartbeats the task until stopped,
// and hands on each answer.
func TestKeepAliveHeartbeats(t *testing.T) {
	ctx := context.Background()
	c := steward.New(stewardURL, steward.WithToken(agentToken))
	task, err := c.CreateTask(ctx, &stewardv1.CreateTaskRequest{Contract: contract("Kept alive")})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var answers []*stewardv1.HeartbeatResponse
	stop := c.KeepAlive(ctx, task.Contract.TaskId, 10*time.Millisecond, func(resp *stewardv1.HeartbeatResponse, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			t.Errorf("heartbeat: %v", err)
		}
		answers = append(answers, resp)
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(answers)
		mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	if len(answers) < 3 || answers[0].TaskStatus == stewardv1.TaskStatus_TASK_STATUS_UNSPECIFIED {
		t.Fatalf("%d heartbeats in 10 s: %v", len(answers), answers)
	}
}

// TestALostVoteIsFound: the answer to an approver's DecideApproval that
// Steward recorded is lost; the retry is refused as a vote already cast,
// and DecideApproval answers with the approval that holds it.
func TestALostVoteIsFound(t *testing.T) {
	ctx := context.Background()
	agent := steward.New(stewardURL, steward.WithToken(agentToken))
	k := contract("Publish once, approved once")
	k.RiskTier = stewardv1.RiskTier_RISK_TIER_MEDIUM
	task, err := agent.CreateTask(ctx, &stewardv1.CreateTaskRequest{Contract: k})
	if err != nil {
		t.Fatal(err)
	}
	params, _ := structpb.NewStruct(map[string]any{"path": "reports/lost.md", "content": "# lost"})
	a, err := agent.ProposeAndWait(ctx, &stewardv1.ProposeActionRequest{TaskId: task.Contract.TaskId, Tool: "publish", Target: "drive", Params: params,
		Rationale: &stewardv1.ActionRationale{ExpectedImpact: "the drive shows it", RollbackPlan: "publish a correction"}})
	if err != nil || a.Approval == nil {
		t.Fatalf("propose: %v %v", a, err)
	}
	const path = "/steward.v1.GovernanceService/DecideApproval"
	p := startProxy(t, path)
	approver := steward.New(p.URL, steward.WithToken(approverToken), quick())
	ap, err := approver.DecideApproval(ctx, &stewardv1.DecideApprovalRequest{ApprovalId: a.Approval.ApprovalId, ActionHash: a.ActionHash,
		Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE})
	if err != nil || p.count(path) != 2 || ap.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE || len(ap.Votes) != 1 {
		t.Fatalf("a vote whose answer was lost, sent %d times: %v, %v; want the approval approved with one vote", p.count(path), ap, err)
	}
}
