package execution_test

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/egress"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/breaker"
)

// names is a resolver the test can turn: each name answers what it is
// set to now, as a DNS server that rebinds would.
type names struct {
	mu sync.Mutex
	to map[string]string
}

func (n *names) set(host, addr string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.to[host] = addr
}

func (n *names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	a, ok := n.to[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

// TestATenantsToolCannotReachInside: a tenant's tool pointed at loopback,
// the metadata service's link-local address, a private address, or a
// name that resolves to one is refused at registration, naming the
// field; a name that resolved outside at registration and resolves to
// loopback at the call (DNS rebinding) fails the action
// deterministically, and the tool, listening there, never sees the call.
// A global tool at the same address is the platform's, and is called.
// Found by the review of issue 27 (finding 4).
func TestATenantsToolCannotReachInside(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	dns := &names{to: map[string]string{"inside.test": "192.168.1.10", "rebind.test": "203.0.113.7", "outside.test": "203.0.113.8"}}
	b.plane.Stop()
	b.cfg.Egress = egress.New(egress.Config{Resolver: dns})
	b.start()
	ts := startTool(t)
	port := mustURL(t, ts.URL).Port()
	ctx := context.Background()
	for _, c := range []struct{ name, url, status, field string }{
		{"loopback", ts.URL + callPath, "", "contract.http.url"},
		{"metadata", "http://169.254.169.254/latest/meta-data/", "", "contract.http.url"},
		{"private", "http://10.1.2.3:" + port + callPath, "", "contract.http.url"},
		{"ipv6-loopback", "http://[::1]:" + port + callPath, "", "contract.http.url"},
		{"mapped", "http://[::ffff:127.0.0.1]:" + port + callPath, "", "contract.http.url"},
		{"name", "http://inside.test:" + port + callPath, "", "contract.http.url"},
		{"status", "http://outside.test" + callPath, ts.URL + "/status", "contract.http.status_url"},
	} {
		k := ts.Contract("probe-"+c.name, callPath)
		k.GetHttp().Url, k.GetHttp().StatusUrl = c.url, c.status
		k.StatusQuery = c.status != ""
		_, _, err := b.plane.Register(ctx, "acme", "admin", k)
		var bad *errs.Error
		if !errors.As(err, &bad) || bad.Code != errs.Invalid || bad.Field != c.field || !strings.Contains(bad.Message, "may not reach") {
			t.Errorf("%s: a tenant registers %s: %v; want invalid %s, refused by the egress rule", c.name, c.url+c.status, err, c.field)
		}
	}

	k := ts.Contract("rebound", callPath)
	k.GetHttp().Url = "http://rebind.test:" + port + callPath
	k.StatusQuery, k.GetHttp().StatusUrl = false, ""
	if _, _, err := b.plane.Register(ctx, "acme", "admin", k); err != nil {
		t.Fatalf("rebind.test resolves outside at registration: %v", err)
	}
	dns.set("rebind.test", "127.0.0.1")
	taskID := "t-rebound"
	b.Append(taskID, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: taskID, Intent: "test", AllowedTools: []string{"rebound"}}, Tenant: "acme"}, &stewardv1.TaskStarted{})
	a, permitted := b.allow(taskID, "p1", "rebound", "x")
	b.Append(taskID, permitted)
	got := b.WaitAction(taskID, a.ActionId, status(failedS))
	if o := got.Outcome; o.GetFailureClass() != stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC || got.Attempt != 1 ||
		!strings.Contains(o.GetReason(), "egress rule") || !strings.Contains(o.GetReason(), "127.0.0.1") {
		t.Errorf("the call to a name rebound to loopback: %v after %d attempts; want failed deterministic at once, naming the egress rule and the address", o, got.Attempt)
	}
	if n := ts.Calls(); n != 0 {
		t.Errorf("the tool on loopback saw %d calls; want none", n)
	}

	b.register(ts, "platform", false, nil)
	taskID, actionID := b.permit("t-platform", "platform", "x")
	if a := b.WaitAction(taskID, actionID, status(succeededS)); ts.Executions(a.OpKey) != 1 {
		t.Errorf("a global tool on loopback: work done %d times, want 1", ts.Executions(a.OpKey))
	}
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestAStatusQueryTheEgressRuleRefusesWaitsForAPerson: a tenant's call
// that ends unknown is not settled by asking a status_url that now
// resolves inside: the query is refused on the connection, never sent,
// and not asked again and again; the outcome waits for SettleAction,
// with a warning saying why.
func TestAStatusQueryTheEgressRuleRefusesWaitsForAPerson(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	dns := &names{to: map[string]string{"status.test": "203.0.113.9"}}
	var logs stewardtest.LogBuffer
	b.plane.Stop()
	b.cfg.Egress = egress.New(egress.Config{Resolver: dns, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	b.logger = slog.New(slog.NewTextHandler(&logs, nil))
	b.start()
	ts := stewardtest.StartTool(t).Always(callPath, stewardtest.Silent)
	k := ts.Contract("held", callPath)
	k.GetHttp().StatusUrl = "http://status.test:" + mustURL(t, ts.URL).Port() + "/status"
	k.RetryPolicy.MaxAttempts = 1
	if _, _, err := b.plane.Register(context.Background(), "acme", "admin", k); err != nil {
		t.Fatal(err)
	}
	dns.set("status.test", "169.254.169.254")
	taskID := "t-held"
	b.Append(taskID, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: taskID, Intent: "test", AllowedTools: []string{"held"}}, Tenant: "acme"}, &stewardv1.TaskStarted{})
	a, permitted := b.allow(taskID, "p1", "held", "x")
	b.Append(taskID, permitted)
	got := b.WaitAction(taskID, a.ActionId, status(unknownS))
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		return strings.Contains(logs.String(), "the egress rule refuses the tool's status_url"), "no warning that the status query is refused"
	})
	if n := ts.Asks(got.OpKey); n != 0 {
		t.Errorf("the status query reached the tool %d times; want none", n)
	}
	if b.timer("*", execution.TimerReconcile) {
		t.Errorf("a status query refused by the egress rule is set to be asked again")
	}
}
