package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/cmd/steward/app"
	"github.com/steward-run/steward/pkg/embedded"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
)

const allowAll = "package steward.policy\n\ndecision := {\"decision\": \"allow\", \"reasons\": [\"benchmark: allow all\"]}\n"

const toolsJSON = `{"tools": [{"name": "noop", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "builtin": {"kind": "noop"}}]}`

// armDir makes a temporary directory for an arm, named from prefix, with
// the tools file and, if allow, the allow-all policy in it (stewardFiles).
// The arm removes dir when done.
func armDir(prefix string, allow bool) (dir, tools, policy string, err error) {
	if dir, err = os.MkdirTemp("", prefix); err != nil {
		return "", "", "", err
	}
	if tools, policy, err = stewardFiles(dir, allow); err != nil {
		os.RemoveAll(dir)
		return "", "", "", err
	}
	return dir, tools, policy, nil
}

// stewardFiles writes the tools file and, if allow, the allow-all policy
// under dir.
func stewardFiles(dir string, allow bool) (tools, policy string, err error) {
	tools = filepath.Join(dir, "tools.json")
	if err := os.WriteFile(tools, []byte(toolsJSON), 0o600); err != nil {
		return "", "", err
	}
	if allow {
		policy = filepath.Join(dir, "policy")
		if err := os.MkdirAll(policy, 0o750); err != nil {
			return "", "", err
		}
		if err := os.WriteFile(filepath.Join(policy, "allow.rego"), []byte(allowAll), 0o600); err != nil {
			return "", "", err
		}
	}
	return tools, policy, nil
}

func runDevAllow(o opts) (Result, error)   { return runDev(o, true, twoCalls) }
func runDevDefault(o opts) (Result, error) { return runDev(o, false, twoCalls) }
func runDevOneCall(o opts) (Result, error) { return runDev(o, true, oneCall) }

// runDevSync is arm (b3): (b1), the path the SDKs take (ProposeAndWait),
// with --sync always, so that every append is on disk before it is
// acknowledged, as PostgreSQL's commits are in arms (e1) and (e2).
func runDevSync(o opts) (Result, error) { return runDev(o, true, oneCall, "--sync", "always") }

// runDevTraced is arm (b2): (b) with traces on, every span batched over
// OTLP/HTTP to a receiver in this process that reads and drops them, so
// that the CPU per action counts the spans, the context on each event and
// the export, and not a collector's work.
func runDevTraced(o opts) (Result, error) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer sink.Close()
	return runDev(o, true, twoCalls, "--trace-endpoint", sink.URL)
}

// runDev is arms (b), (b1), (b3) and (c): `steward dev` in this process,
// driven over Connect on loopback.
func runDev(o opts, allow bool, act act, more ...string) (Result, error) {
	dir, tools, policy, err := armDir("bench-dev-", allow)
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	// The default: the agent's token from the file steward dev creates.
	data := filepath.Join(dir, "data")
	flags := []string{"--addr", "127.0.0.1:0", "--data", data, "--log-level", "error", "--tools", tools}
	if policy != "" {
		flags = append(flags, "--policy-dir", policy)
	}
	flags = append(flags, more...)
	m := app.NewServer(io.Discard, os.Stderr)
	if err := m.ParseFlags("dev", flags); err != nil {
		return Result{}, err
	}
	if err := m.Run(context.Background()); err != nil {
		return Result{}, err
	}
	defer m.Close()
	token, err := agentToken(filepath.Join(data, app.TokensFileName))
	if err != nil {
		return Result{}, err
	}
	return driveSteward(o, m.URL(), m.URL(), token, act, nil)
}

// agentToken returns the token of the agent (the identity with no role)
// in a dev token file.
func agentToken(path string) (string, error) {
	tokens, err := rpc.LoadTokens(path)
	if err != nil {
		return "", err
	}
	for token, id := range tokens {
		if len(id.Roles) == 0 {
			return token, nil
		}
	}
	return "", fmt.Errorf("%s has no agent token", path)
}

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// runServices is arm (d): the four planes as `steward serve` servers, in
// this process, each with its own NATS connection over TCP to an embedded
// NATS server, driven over Connect: control for writes, state for reads.
func runServices(o opts) (Result, error) {
	dir, tools, policy, err := armDir("bench-services-", true)
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	bus, err := embedded.Start(embedded.Config{StoreDir: filepath.Join(dir, "nats"), Port: -1})
	if err != nil {
		return Result{}, err
	}
	defer bus.Shutdown()
	urls := map[string]string{}
	for _, plane := range []string{"state", "governance", "execution", "control"} {
		flags := []string{"--plane", plane, "--nats", bus.ClientURL(), "--addr", "127.0.0.1:0", "--log-level", "error",
			"--sandbox", filepath.Join(dir, "sandbox"), "--tools", tools, "--policy-dir", policy,
			"--credential-key", filepath.Join(dir, "credential.key"), "--insecure"}
		m := app.NewServer(io.Discard, os.Stderr)
		if err := m.ParseFlags("serve", flags); err != nil {
			return Result{}, err
		}
		if err := m.Run(context.Background()); err != nil {
			return Result{}, fmt.Errorf("%s plane: %w", plane, err)
		}
		defer m.Close()
		urls[plane] = m.URL()
	}
	return driveSteward(o, urls["control"], urls["state"], "", twoCalls, nil)
}

// actionsPerTask is how many actions a task takes before the next one is
// created: real tasks take tens of actions.
const actionsPerTask = 25

type client struct {
	tasks stewardv1connect.TaskServiceClient
	query stewardv1connect.QueryServiceClient
}

// driveSteward measures governed actions through the control plane at
// writeURL and the state plane at readURL, each made by act: latency is
// from its first call until it has the outcome; throughput and CPU
// include creating a task every 25 actions. A token, if any, is sent with
// every call; others reads the CPU time of the processes the planes and
// NATS run in, when not this one.
func driveSteward(o opts, writeURL, readURL, token string, act act, others func() map[string]time.Duration) (Result, error) {
	var transport http.RoundTripper = &http.Transport{MaxIdleConnsPerHost: 64}
	if token != "" {
		transport = bearer{token: token, next: transport}
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: transport}
	c := client{
		tasks: stewardv1connect.NewTaskServiceClient(hc, writeURL),
		query: stewardv1connect.NewQueryServiceClient(hc, readURL),
	}
	params, _ := structpb.NewStruct(map[string]any{})
	type worker struct {
		task string
		n    int
	}
	workers := make([]worker, concurrency+1)
	var tasks atomic.Int64
	one := func(w int) ([]time.Duration, int, error) {
		wk := &workers[w]
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if wk.n%actionsPerTask == 0 {
			id, err := newTask(ctx, c, fmt.Sprint("bench-", tasks.Add(1)))
			if err != nil {
				return nil, 0, err
			}
			wk.task = id
		}
		wk.n++
		start := time.Now()
		a, err := act(ctx, c, &stewardv1.ProposeActionRequest{TaskId: wk.task, ProposalId: fmt.Sprint("p", wk.n), Tool: "noop", Params: params})
		if err != nil {
			return nil, 0, err
		}
		if a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
			return nil, 0, fmt.Errorf("action %s is not visible as succeeded: it is %v", a.ActionId, a.Status)
		}
		return []time.Duration{time.Since(start)}, 1, nil
	}
	return phases(o.latencyN, o.throughputN, one, others)
}

// act makes one governed action and returns it once it has stopped
// moving.
type act func(ctx context.Context, c client, req *stewardv1.ProposeActionRequest) (*stewardv1.Action, error)

// twoCalls is the path of every client before ProposeAction took wait:
// ProposeAction, then GetAction with wait.
func twoCalls(ctx context.Context, c client, req *stewardv1.ProposeActionRequest) (*stewardv1.Action, error) {
	resp, err := c.tasks.ProposeAction(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	got, err := c.query.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: req.TaskId, ActionId: resp.Msg.Action.ActionId, Wait: true}))
	if err != nil {
		return nil, err
	}
	return got.Msg.Action, nil
}

// oneCall is ProposeAction with wait: one round trip.
func oneCall(ctx context.Context, c client, req *stewardv1.ProposeActionRequest) (*stewardv1.Action, error) {
	req.Wait = true
	resp, err := c.tasks.ProposeAction(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	return resp.Msg.Action, nil
}

// newTask creates a task that may use noop and waits until it runs.
func newTask(ctx context.Context, c client, requestID string) (string, error) {
	k := &stewardv1.TaskContract{
		Intent:              "benchmark",
		DesiredOutcome:      "no-op actions",
		RequesterRef:        "user:bench",
		AccountableOwnerRef: "user:bench",
		RiskTier:            stewardv1.RiskTier_RISK_TIER_LOW,
		Budget:              &stewardv1.Budget{MaxTokens: 50_000},
		AllowedTools:        []string{"noop"},
	}
	resp, err := c.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: k}))
	if err != nil {
		return "", err
	}
	id := resp.Msg.Task.Contract.TaskId
	for {
		got, err := c.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: id}))
		if err != nil && connect.CodeOf(err) != connect.CodeNotFound {
			return "", err
		}
		if err == nil && got.Msg.Task.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING {
			return id, nil
		}
		if ctx.Err() != nil {
			return "", errors.New("task " + id + " did not start running")
		}
		time.Sleep(time.Millisecond)
	}
}
