package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state/notify"
)

const (
	oldSecret = "whsec_b2xkIHNlY3JldCBmb3IgdGhlIG9wcyBzaW5r"
	newSecret = "whsec_bmV3IHNlY3JldCBmb3IgdGhlIG9wcyBzaW5r"
)

// sink is a receiver that keeps what it took, by task: the last
// delivery's headers, and each delivery's kind, question and act.
type sink struct {
	mu        sync.Mutex
	got       map[string]http.Header
	kinds     map[string][]string
	questions map[string][]json.RawMessage
	acts      map[string][]string
	srv       *httptest.Server
	name      string
}

func newSink(t *testing.T, name string) *sink {
	s := &sink{got: map[string]http.Header{}, kinds: map[string][]string{}, questions: map[string][]json.RawMessage{}, acts: map[string][]string{}, name: name}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n notify.Notification
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		s.mu.Lock()
		s.got[n.TaskID] = r.Header.Clone()
		s.kinds[n.TaskID] = append(s.kinds[n.TaskID], n.Kind)
		s.questions[n.TaskID] = append(s.questions[n.TaskID], n.Question)
		s.acts[n.TaskID] = append(s.acts[n.TaskID], n.Act)
		s.mu.Unlock()
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sink) has(taskID string) (http.Header, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.got[taskID]
	return h, ok
}

func (s *sink) wait(t *testing.T, taskID string) http.Header {
	t.Helper()
	var h http.Header
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		var ok bool
		h, ok = s.has(taskID)
		return ok, fmt.Sprintf("sink %s has nothing of %s", s.name, taskID)
	})
	return h
}

// waitKinds waits until the sink has taken n notifications of taskID and
// returns their kinds and questions.
func (s *sink) waitKinds(t *testing.T, taskID string, n int) ([]string, []json.RawMessage) {
	t.Helper()
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.kinds[taskID]) >= n, fmt.Sprintf("sink %s has %v of %s, want %d", s.name, s.kinds[taskID], taskID, n)
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.kinds[taskID]), slices.Clone(s.questions[taskID])
}

// TestSinksFollowTheirFile runs a notifier over a real log: an operator's
// sink takes every tenant's ended tasks, acme's only acme's; the file is
// then changed — acme's sink removed, another added, the operator's secret
// rotated — and the notifier follows it without a restart: the new sink
// takes what comes after it, the operator's notifications carry both
// signatures during the rotation.
func TestSinksFollowTheirFile(t *testing.T) {
	env := stewardtest.NewEnv(t)
	ops, acme, late := newSink(t, "ops"), newSink(t, "acme"), newSink(t, "late")
	file := filepath.Join(t.TempDir(), "sinks.json")
	write := func(sinks ...string) {
		if err := os.WriteFile(file, []byte(`{"sinks": [`+strings.Join(sinks, ",")+`]}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	entry := func(name, url, tenant string, secrets ...string) string {
		b, _ := json.Marshal(map[string]any{"name": name, "url": url, "tenant": tenant, "kinds": []string{"task.ended"}, "secrets": secrets})
		return string(b)
	}
	high := newSink(t, "high")
	highEntry := fmt.Sprintf(`{"name": "high", "url": %q, "riskTiers": ["RISK_TIER_HIGH"], "secrets": [%q]}`, high.srv.URL, oldSecret)
	asks := newSink(t, "asks")
	asksEntry := fmt.Sprintf(`{"name": "asks", "url": %q, "kinds": ["question.reminded", "question.escalated"], "secrets": [%q]}`, asks.srv.URL, oldSecret)
	write(entry("ops", ops.srv.URL, "", oldSecret), entry("acme", acme.srv.URL, "acme", oldSecret), highEntry, asksEntry)
	// The state plane's own NATS user runs the sinks' consumers, as it
	// does in a deployment (pkg/natsperm): a consumer it may not make
	// would never start.
	nc, err := env.ConnectAs(event.PlaneState, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		t.Errorf("NATS refused the state plane: %v", err)
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	cfg := env.Log.Config()
	cfg.SoleConsumer = false
	log, err := eventlog.Open(context.Background(), js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	n, err := notify.New(notify.Config{Log: log, Tasks: env.Tasks, File: file, Reload: 20 * time.Millisecond, Logger: env.Logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	running := func(sinks ...string) {
		t.Helper()
		for _, s := range sinks {
			stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
				_, err := env.JS.Consumer(context.Background(), env.Log.Config().Stream, notify.Consumer(s))
				return err == nil, fmt.Sprintf("no consumer of sink %s: %v", s, err)
			})
		}
	}
	endAt := func(taskID, tenant string, tier stewardv1.RiskTier) {
		env.Append(taskID, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: taskID, RiskTier: tier}, Tenant: tenant},
			&stewardv1.TaskStarted{}, &stewardv1.TaskCancelled{Reason: "done with"})
	}
	end := func(taskID, tenant string) { endAt(taskID, tenant, stewardv1.RiskTier_RISK_TIER_LOW) }
	running("ops", "acme", "high", "asks")
	ask(t, env, "t-asks")
	if kinds, questions := asks.waitKinds(t, "t-asks", 2); !slices.Equal(kinds, []string{"question.reminded", "question.escalated"}) ||
		!strings.Contains(string(questions[1]), `"escalatedTo":"role:on-call"`) {
		t.Errorf("the questions' sink took %v, questions %s; want the reminder, then the escalation with the question", kinds, questions)
	}
	end("t-default", "")
	end("t-acme", "acme")
	endAt("t-high", "", stewardv1.RiskTier_RISK_TIER_HIGH)
	ops.wait(t, "t-default")
	ops.wait(t, "t-acme")
	acme.wait(t, "t-acme")
	high.wait(t, "t-high")
	if _, ok := acme.has("t-default"); ok {
		t.Error("acme's sink took the default tenant's task")
	}
	if _, ok := high.has("t-default"); ok {
		t.Error("the high-risk sink took a low-risk task")
	}

	write(entry("ops", ops.srv.URL, "", newSecret, oldSecret), entry("late", late.srv.URL, "", newSecret))
	running("late")
	// A sink added now is not told of what came before it.
	end("t-after", "acme")
	h := ops.wait(t, "t-after")
	late.wait(t, "t-after")
	if _, ok := late.has("t-default"); ok {
		t.Error("a sink added later was told of an earlier task")
	}
	if sigs := strings.Fields(h.Get(notify.HeaderSignature)); len(sigs) != 2 {
		t.Errorf("during the rotation the operator's sink got %d signatures, want 2 (new and old)", len(sigs))
	}
	if _, ok := acme.has("t-after"); ok {
		t.Error("a removed sink was still told")
	}
}

// ask writes a task whose question is reminded, then escalated to its
// backup.
func ask(t *testing.T, env *stewardtest.Env, taskID string) {
	t.Helper()
	question := stewardtest.Event(t, taskID, &stewardv1.TaskNeedsInput{Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED, Question: "Which region?"})
	env.Append(taskID, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: taskID, InputBackupRef: "role:on-call"}}, &stewardv1.TaskStarted{})
	env.AppendEvents(taskID, question,
		stewardtest.Event(t, taskID, &stewardv1.InputReminded{QuestionId: question.EventId}),
		stewardtest.Event(t, taskID, &stewardv1.InputEscalated{QuestionId: question.EventId, ToRef: "role:on-call"}))
}
