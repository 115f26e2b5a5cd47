package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/steward-run/steward/cmd/steward/app"
	"github.com/steward-run/steward/pkg/embedded"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// binary is the steward binary built once for the package, in buildDir.
var binary, buildDir string

func TestMain(m *testing.M) {
	// A cluster node the cluster tests run in a process of its own is this
	// binary again.
	stewardtest.RunNodeFromEnv()
	// So is the scripted agent (agent_test.go).
	runAgentFromEnv()
	dir, err := os.MkdirTemp("", "steward-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	binary = filepath.Join(dir, "steward")
	build := exec.Command("go", "build", "-o", binary, "../cmd/steward")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	// STEWARD_E2E_BINARY runs the tests against a binary built elsewhere:
	// an earlier build writing the history corpus (scripts/corpus).
	if prebuilt := os.Getenv("STEWARD_E2E_BINARY"); prebuilt != "" {
		binary = prebuilt
	} else if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build steward:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// The tokens a harness knows, one per role.
const (
	agentToken     = "agent-token-0123456789"          // agent:summariser
	approverToken  = "approver-token-0123456789"       // user:bo, authorizer
	viewerToken    = "viewer-token-0123456789"         // user:cy, viewer
	operatorToken  = "e2e-operator-token-0123456789"   // user:ops, operator
	funderToken    = "e2e-budget-owner-token-0123"     // user:fin, budget-owner
	reviewerToken  = "e2e-reviewer-token-0123456789"   // user:rev, no role: an acceptance owner
	ownerToken     = "e2e-acceptance-owner-token-0123" // user:owner, no role: an acceptance owner
	treasurerToken = "e2e-treasury-token-0123456789"   // user:tess, treasury
	toolAdminToken = "e2e-tool-admin-token-0123456789" // user:tools, tool-admin
	adminToken     = "e2e-admin-token-0123456789"      // user:root, admin: may do everything
	subAgentToken  = "e2e-sub-agent-token-0123456789"  // agent:researcher, no role: a sub-agent
	// Two more approvers, for approvals that need several people.
	secondApproverToken = "e2e-second-approver-token-0123" // user:di, authorizer
	thirdApproverToken  = "e2e-third-approver-token-01234" // user:eve, authorizer
	// Callers of two tenants, acme and globex, under the same names as
	// the default tenant's (docs/tenants.md).
	acmeAgentToken      = "e2e-acme-agent-token-0123456789"    // agent:summariser of acme
	acmeApproverToken   = "e2e-acme-approver-token-012345678"  // user:bo of acme, authorizer
	acmeToolAdminToken  = "e2e-acme-tool-admin-token-01234567" // user:tools of acme, tool-admin
	globexAgentToken    = "e2e-globex-agent-token-0123456789"  // agent:summariser of globex
	globexAdminToken    = "e2e-globex-admin-token-0123456789"  // user:root of globex, admin
	globexApproverToken = "e2e-globex-approver-token-01234567" // user:bo of globex, authorizer
)

// tokensFile is the tokens file that gives each token above its principal
// and role.
const tokensFile = `{"tokens": [
  {"token": "` + agentToken + `", "principal": "agent:summariser", "roles": []},
  {"token": "` + approverToken + `", "principal": "user:bo", "roles": ["authorizer"]},
  {"token": "` + viewerToken + `", "principal": "user:cy", "roles": ["viewer"]},
  {"token": "` + operatorToken + `", "principal": "user:ops", "roles": ["operator"]},
  {"token": "` + funderToken + `", "principal": "user:fin", "roles": ["budget-owner"]},
  {"token": "` + reviewerToken + `", "principal": "user:rev", "roles": []},
  {"token": "` + ownerToken + `", "principal": "user:owner", "roles": []},
  {"token": "` + treasurerToken + `", "principal": "user:tess", "roles": ["treasury"]},
  {"token": "` + toolAdminToken + `", "principal": "user:tools", "roles": ["tool-admin"]},
  {"token": "` + adminToken + `", "principal": "user:root", "roles": ["admin"]},
  {"token": "` + subAgentToken + `", "principal": "agent:researcher", "roles": []},
  {"token": "` + secondApproverToken + `", "principal": "user:di", "roles": ["authorizer"]},
  {"token": "` + thirdApproverToken + `", "principal": "user:eve", "roles": ["authorizer"]},
  {"token": "` + acmeAgentToken + `", "principal": "agent:summariser", "tenant": "acme"},
  {"token": "` + acmeApproverToken + `", "principal": "user:bo", "roles": ["authorizer"], "tenant": "acme"},
  {"token": "` + acmeToolAdminToken + `", "principal": "user:tools", "roles": ["tool-admin"], "tenant": "acme"},
  {"token": "` + globexAgentToken + `", "principal": "agent:summariser", "tenant": "globex"},
  {"token": "` + globexAdminToken + `", "principal": "user:root", "roles": ["admin"], "tenant": "globex"},
  {"token": "` + globexApproverToken + `", "principal": "user:bo", "roles": ["authorizer"], "tenant": "globex"}
]}`

// harness is a Steward under test — the real binary, or the same Main in
// this process — with a client for each role of tokensFile.
type harness struct {
	// top is the test that started it: what fixtures start lives as long.
	top testing.TB
	url string
	dir string // where its files are
	// proc is the binary, unless it runs in this process.
	proc *proc
	// natsURL is where the binary's NATS takes clients (setup.nats).
	natsURL string
	// policy is the policy bundle the binary reloads (setup.policy), and
	// rego the default bundle it started as.
	policy string
	rego   []byte

	agent, approver, viewer, operator, funder, reviewer, owner, treasurer authed
	ops                                                                   stewardv1connect.ActionServiceClient // as the operator

	mu       sync.Mutex
	fixtures map[string]any
}

// setup says how a harness runs Steward.
type setup struct {
	// tools are the tools file's entries, JSON objects; none when empty.
	tools []string
	// open runs in the open mode (--insecure): callers are not
	// authenticated.
	open bool
	// policy runs with a policy directory holding the default bundle,
	// which the test may rewrite (reloadPolicy).
	policy bool
	// nats makes the binary take NATS clients, at natsURL.
	nats bool
	// inProcess runs Main in this process: faster, for tests that need no
	// signal.
	inProcess bool
	// flags are more flags for `steward dev`.
	flags []string
}

// startSteward starts Steward as s says and returns its harness; it stops
// when the test ends.
func startSteward(tb testing.TB, s setup) *harness {
	tb.Helper()
	h := &harness{top: tb, dir: tb.TempDir(), fixtures: map[string]any{}}
	flags := append([]string{}, s.flags...)
	if len(s.tools) > 0 {
		flags = append(flags, "--tools", writeFile(tb, h.dir, "tools.json", `{"tools": [`+strings.Join(s.tools, ",\n")+`]}`))
	}
	if !s.open {
		flags = append(flags, "--auth", writeFile(tb, h.dir, "tokens.json", tokensFile))
	}
	if s.policy {
		rego, err := os.ReadFile("../services/governance/policy/default/steward.rego")
		if err != nil {
			tb.Fatal(err)
		}
		h.rego = rego
		h.policy = writeFile(tb, filepath.Join(h.dir, "policy"), "steward.rego", string(rego))
		flags = append(flags, "--policy-dir", filepath.Dir(h.policy))
	}
	if s.nats {
		addr := stewardtest.FreeAddr(tb)
		h.natsURL = "nats://" + addr
		flags = append(flags, "--nats-listen", addr)
	}
	if s.inProcess {
		// Where natsUser finds the NATS users' seeds.
		h.url = startInProcess(tb, append(flags, "--data", filepath.Join(h.dir, "data"))...)
	} else {
		h.proc = startBinary(tb, filepath.Join(h.dir, "data"), flags...)
		h.url = h.proc.url
	}
	h.agent, h.approver, h.viewer = withToken(h.url, agentToken), withToken(h.url, approverToken), withToken(h.url, viewerToken)
	h.operator, h.funder, h.reviewer = withToken(h.url, operatorToken), withToken(h.url, funderToken), withToken(h.url, reviewerToken)
	h.owner, h.treasurer = withToken(h.url, ownerToken), withToken(h.url, treasurerToken)
	h.ops = actionClient(h.url, operatorToken)
	recordCorpus(tb, h)
	return h
}

// fixture returns what build made the first time h was asked for key:
// tests that need the same situation share it.
func fixture[T any](h *harness, key string, build func() T) T {
	h.mu.Lock()
	v, ok := h.fixtures[key]
	h.mu.Unlock()
	if ok {
		return v.(T)
	}
	made := build()
	h.mu.Lock()
	h.fixtures[key] = made
	h.mu.Unlock()
	return made
}

// reloadPolicy writes the default bundle with rules added and waits until
// governance decides under it: until probe, which runs an action and
// returns the bundle revision of its snapshot, sees a new revision.
func (h *harness) reloadPolicy(t *testing.T, rules string, probe func() string) {
	t.Helper()
	before := probe()
	if err := os.WriteFile(h.policy, append(append([]byte{}, h.rego...), rules...), 0o600); err != nil {
		t.Fatal(err)
	}
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		return probe() != before, "the policy directory was not reloaded"
	})
}

// create creates a task with k as agent, waits until it runs with its
// credential, and returns its id.
func (h *harness) create(t *testing.T, requestID string, k *stewardv1.TaskContract) string {
	t.Helper()
	resp, err := h.agent.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: k}))
	if err != nil {
		t.Fatalf("create %s: %v", requestID, err)
	}
	id := resp.Msg.Task.Contract.TaskId
	waitStarted(t, h.agent.clients, id)
	return id
}

// writeFile writes content to dir/name, making dir, and returns the path.
func writeFile(tb testing.TB, dir, name, content string) string {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// proc is a running steward binary.
type proc struct {
	cmd *exec.Cmd
	url string

	mu     sync.Mutex
	stdout strings.Builder // what it printed, line by line
	stderr lockedBuffer    // what it logged
}

// logged returns what p has written on stderr so far: its log.
func (p *proc) logged() string { return p.stderr.String() }

// lockedBuffer is a buffer a process's output goroutine writes while a
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// printed returns what p has printed on stdout so far.
func (p *proc) printed() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String()
}

var servingLine = regexp.MustCompile(`serving Connect, gRPC and gRPC-Web on (https?://\S+)`)

// startBinary runs `steward dev` on a free loopback port with its data in
// dataDir and waits until it says where it serves.
func startBinary(tb testing.TB, dataDir string, flags ...string) *proc {
	tb.Helper()
	return startBinaryEnv(tb, dataDir, nil, flags...)
}

// startBinaryEnv is startBinary with env ("KEY=value") added to the
// process's environment; a later value of a key wins.
func startBinaryEnv(tb testing.TB, dataDir string, env []string, flags ...string) *proc {
	tb.Helper()
	return startCommand(tb, env, append([]string{"dev", "--addr", "127.0.0.1:0", "--data", dataDir, "--log-level", "warn"}, openUnlessAuth(flags)...)...)
}

// openUnlessAuth returns flags with --insecure added unless they name a
// token file: a test that is not about authentication runs in the open
// mode, callers naming themselves in the Steward-Principal header, as
// before `steward dev` had tokens by default. Tests of the default start
// the binary with startCommand.
func openUnlessAuth(flags []string) []string {
	for _, f := range flags {
		if f == "--auth" || strings.HasPrefix(f, "--auth=") || f == "--insecure" {
			return flags
		}
	}
	return append(slices.Clip(flags), "--insecure")
}

// startCommand runs the binary with args and waits until it says where
// it serves.
func startCommand(tb testing.TB, env []string, args ...string) *proc {
	tb.Helper()
	return startCommandOf(tb, binary, env, args...)
}

// startCommandOf is startCommand of the binary at bin.
func startCommandOf(tb testing.TB, bin string, env []string, args ...string) *proc {
	tb.Helper()
	p, serving := spawnCommand(tb, bin, env, args...)
	p.waitServing(tb, serving)
	return p
}

// spawnCommand runs bin with args and returns at once, with the channel
// that brings the address it says it serves at (waitServing).
func spawnCommand(tb testing.TB, bin string, env []string, args ...string) (*proc, <-chan string) {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	p := &proc{cmd: cmd}
	cmd.Stderr = io.MultiWriter(&testWriter{tb: tb}, &p.stderr)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.kill() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.stdout.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	return p, found
}

// waitServing waits until p says where it serves.
func (p *proc) waitServing(tb testing.TB, serving <-chan string) {
	tb.Helper()
	select {
	case p.url = <-serving:
	case <-time.After(serveWait):
		tb.Fatalf("steward did not say it was serving within %s", serveWait)
	}
}

// serveWait bounds how long a started binary may take to serve. A plane
// restarted into a cluster that is electing a stream leader waits for
// the election before it serves: 20 s was once too short for that on a
// loaded machine (TestClusterFaults), and a longer bound costs nothing
// when the binary is quick. It is longer than the binary's own bound on
// opening its stores (storesWait in cmd/steward/app), so that a start
// that gives up says why before the test does.
const serveWait = 150 * time.Second

// kill sends SIGKILL: no shutdown code runs.
func (p *proc) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}

// stop sends SIGINT and waits for a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.stopWith(t, os.Interrupt)
}

// stopWith sends sig and waits for a clean exit.
func (p *proc) stopWith(t *testing.T, sig os.Signal) {
	t.Helper()
	_ = p.cmd.Process.Signal(sig)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("steward did not exit cleanly: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("steward did not stop within 15s of %v", sig)
	}
}

// startInProcess runs `steward dev` with flags in this process: faster,
// for tests that need no SIGKILL. It logs warnings to the test log; a
// benchmark's, as benchLog and benchLevel say.
func startInProcess(tb testing.TB, flags ...string) string {
	tb.Helper()
	var logs io.Writer = &testWriter{tb: tb}
	level := "warn"
	if _, bench := tb.(*testing.B); bench {
		logs, level = benchLog(), benchLevel()
	}
	m := app.NewServer(io.Discard, logs)
	if err := m.ParseFlags("dev", append([]string{"--addr", "127.0.0.1:0", "--data", filepath.Join(tb.TempDir(), "data"), "--log-level", level}, openUnlessAuth(flags)...)); err != nil {
		tb.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(m.Close)
	return m.URL()
}

// clients holds a Connect client for each service, all speaking one protocol.
type clients struct {
	tasks stewardv1connect.TaskServiceClient
	query stewardv1connect.QueryServiceClient
	audit stewardv1connect.AuditServiceClient
}

func newClients(url string, opts ...connect.ClientOption) clients {
	// Idle connections for as many calls at once as a test makes (the
	// default keeps two): a client re-dialling for every call measures
	// TCP, not Steward.
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	return clients{
		tasks: stewardv1connect.NewTaskServiceClient(hc, url, opts...),
		query: stewardv1connect.NewQueryServiceClient(hc, url, opts...),
		audit: stewardv1connect.NewAuditServiceClient(hc, url, opts...),
	}
}

// authed is a set of clients that present one bearer token.
type authed struct {
	clients
	governance stewardv1connect.GovernanceServiceClient
	schedules  stewardv1connect.ScheduleServiceClient
}

func withToken(url, token string) authed {
	opt := connect.WithInterceptors(stewardtest.Bearer(token))
	hc := &http.Client{Timeout: 30 * time.Second}
	return authed{clients: newClients(url, opt), governance: stewardv1connect.NewGovernanceServiceClient(hc, url, opt),
		schedules: stewardv1connect.NewScheduleServiceClient(hc, url, opt)}
}

// actionClient is an ActionService client that presents token.
func actionClient(url, token string) stewardv1connect.ActionServiceClient {
	return stewardv1connect.NewActionServiceClient(&http.Client{Timeout: 30 * time.Second}, url, connect.WithInterceptors(stewardtest.Bearer(token)))
}

// contract returns a valid contract; tests change what they need.
func contract() *stewardv1.TaskContract {
	return &stewardv1.TaskContract{
		Intent:              "Summarise last week's incidents",
		DesiredOutcome:      "A one-page summary for the on-call review",
		RequesterRef:        "user:ana",
		AccountableOwnerRef: "user:ana",
		RiskTier:            stewardv1.RiskTier_RISK_TIER_LOW,
		Budget:              &stewardv1.Budget{MaxTokens: 50_000},
		AllowedTools:        []string{"search"},
	}
}

func createTask(t *testing.T, c clients, requestID string) *stewardv1.Task {
	t.Helper()
	resp, err := c.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: contract()}))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Msg.Task
}

// waitServed waits up to within until the task, as GetTask serves it,
// satisfies cond, and returns it. An error counts as not yet: a restarted
// binary may still be rebuilding its projection.
func waitServed(tb testing.TB, c clients, taskID string, within time.Duration, cond func(*stewardv1.Task) (bool, string)) *stewardv1.Task {
	tb.Helper()
	var tk *stewardv1.Task
	stewardtest.Eventually(tb, within, func() (bool, string) {
		resp, err := c.query.GetTask(context.Background(), connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: taskID}))
		if err != nil {
			return false, fmt.Sprintf("task %s: %v", taskID, err)
		}
		tk = resp.Msg.Task
		ok, state := cond(tk)
		return ok, fmt.Sprintf("task %s: %s", taskID, state)
	})
	return tk
}

// waitStatus waits until the task has status want.
func waitStatus(t *testing.T, c clients, taskID string, want stewardv1.TaskStatus) *stewardv1.Task {
	t.Helper()
	return waitServed(t, c, taskID, 10*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return tk.Status == want, fmt.Sprintf("%v, want %v", tk.Status, want)
	})
}

// waitCredential waits until the task holds its credential.
func waitCredential(t *testing.T, c clients, taskID string) *stewardv1.CredentialState {
	t.Helper()
	return waitServed(t, c, taskID, 10*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return tk.Credential != nil, "no credential"
	}).Credential
}

// waitStarted waits until the task runs and holds its credential: the two
// reactions to its creation, which the log may record in either order and
// after later commands. Tests that count or order a task's events start here.
func waitStarted(t *testing.T, c clients, taskID string) {
	t.Helper()
	waitStatus(t, c, taskID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	waitCredential(t, c, taskID)
}

// waitAction waits until the action reaches status want.
func waitAction(t *testing.T, c clients, taskID, actionID string, want stewardv1.ActionStatus) (*stewardv1.Task, *stewardv1.Action) {
	t.Helper()
	return waitActionWithin(t, c, taskID, actionID, 15*time.Second, want)
}

// waitProposal waits up to within for the action proposalID made to reach
// want, and returns it: for an action whose id the test never learnt.
func waitProposal(t *testing.T, c clients, taskID, proposalID string, within time.Duration, want stewardv1.ActionStatus) *stewardv1.Action {
	t.Helper()
	var a *stewardv1.Action
	waitServed(t, c, taskID, within, func(tk *stewardv1.Task) (bool, string) {
		a = byProposal(tk, proposalID)
		return a != nil && a.Status == want, fmt.Sprintf("action %s is not %v:\n%s", proposalID, want, describeActions(tk))
	})
	return a
}

// waitPast waits until the clock — the binary's too — is past at.
func waitPast(t *testing.T, at time.Time) {
	t.Helper()
	stewardtest.Eventually(t, time.Until(at)+10*time.Second, func() (bool, string) {
		return time.Now().After(at), "the clock is not past " + at.String()
	})
}

// testWriter sends a process's log lines to the test log.
type testWriter struct{ tb testing.TB }

// natsRefusal is what a Steward process logs when NATS refuses a plane's
// user: with the permission table right, never.
const natsRefusal = "NATS refused the plane's user"

func (w *testWriter) Write(p []byte) (int, error) {
	w.tb.Logf("%s", p)
	if bytes.Contains(p, []byte(natsRefusal)) {
		w.tb.Errorf("a Steward process was refused by NATS: %s", p)
	}
	return len(p), nil
}

// natsUser returns the option that signs in to the binary's NATS
// (setup.nats) as user: a plane, or embedded.AdminUser, whose seeds dev
// keeps in its data directory.
func (h *harness) natsUser(t testing.TB, user string) nats.Option {
	t.Helper()
	o, err := nats.NkeyOptionFromSeed(embedded.SeedFile(filepath.Join(h.dir, "data", embedded.UsersDir), user))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// events connects to the binary's NATS (setup.nats) as the admin and
// returns its event stream, for a test that looks behind the API.
func (h *harness) events(t *testing.T) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	js := h.jetStreamAs(t, embedded.AdminUser)
	stream, err := js.Stream(context.Background(), "STEWARD_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	return js, stream
}

// jetStreamAs connects to the binary's NATS (setup.nats) as user, with
// opts (a plane's inbox prefix, say), until the test ends.
func (h *harness) jetStreamAs(t *testing.T, user string, opts ...nats.Option) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(h.natsURL, append([]nats.Option{h.natsUser(t, user)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// drain reads a stream to its end and returns its error.
func drain[T any](s *connect.ServerStreamForClient[T], err error) error {
	if err != nil {
		return err
	}
	defer s.Close()
	for s.Receive() {
	}
	return s.Err()
}

// watchFirst watches taskID until its first event, and returns nil once
// one is served, else the stream's error.
func watchFirst(ctx context.Context, q stewardv1connect.QueryServiceClient, taskID string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream, err := q.WatchTask(ctx, connect.NewRequest(&stewardv1.WatchTaskRequest{TaskId: taskID}))
	if err != nil {
		return err
	}
	defer stream.Close()
	if stream.Receive() {
		return nil
	}
	return stream.Err()
}
