package state_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// filtered makes five tasks a list can tell apart by each filter:
//
//	ledger-a  user:ann  low       allowed search@1.0.0     "Reconcile the Ledger"   running
//	ledger-b  user:bob  high      allowed search, email    "Pay the invoices"       created
//	mail-c    user:ann  critical  proposed an action of fetch  "Résumé review"    running
//	mail-d    user:bob  medium    (no tools)               "Close the books"        cancelled
//	other-e   user:ann  low       of tenant globex         "Reconcile the ledger"   created
//	sub-f     user:cat  low       delegated from ledger-a  "Count the coins"        created
func filtered(t *testing.T, env *stewardtest.Env) {
	t.Helper()
	k := func(owner string, risk stewardv1.RiskTier, intent string, tools ...string) *stewardv1.TaskContract {
		return &stewardv1.TaskContract{Intent: intent, DesiredOutcome: "done", RequesterRef: "user:req", AccountableOwnerRef: owner, RiskTier: risk, AllowedTools: tools}
	}
	env.Append("ledger-a", &stewardv1.TaskCreated{Contract: k("user:ann", stewardv1.RiskTier_RISK_TIER_LOW, "Reconcile the Ledger", "search@1.0.0")}, &stewardv1.TaskStarted{})
	env.Append("ledger-b", &stewardv1.TaskCreated{Contract: k("user:bob", stewardv1.RiskTier_RISK_TIER_HIGH, "Pay the invoices", "search", "email")})
	env.Append("mail-c", append([]event.Payload{&stewardv1.TaskCreated{Contract: k("user:ann", stewardv1.RiskTier_RISK_TIER_CRITICAL, "Résumé review")}, &stewardv1.TaskStarted{}},
		act("a1", "fetch", "x", "r1")...)...)
	env.Append("mail-d", &stewardv1.TaskCreated{Contract: k("user:bob", stewardv1.RiskTier_RISK_TIER_MEDIUM, "Close the books")}, &stewardv1.TaskCancelled{})
	env.Append("other-e", &stewardv1.TaskCreated{Contract: k("user:ann", stewardv1.RiskTier_RISK_TIER_LOW, "Reconcile the ledger"), Tenant: "globex"})
	sub := k("user:cat", stewardv1.RiskTier_RISK_TIER_LOW, "Count the coins")
	sub.ParentTaskId = "ledger-a"
	env.Append("sub-f", &stewardv1.TaskCreated{Contract: sub})
}

// ids lists every task req matches, page by page of size one: paging
// across filters loses and repeats nothing.
func ids(t *testing.T, client stewardv1connect.QueryServiceClient, req *stewardv1.ListTasksRequest) []string {
	t.Helper()
	req = proto.CloneOf(req)
	req.PageSize = 1
	var out []string
	for {
		resp, err := client.ListTasks(context.Background(), connect.NewRequest(req))
		if err != nil {
			t.Fatalf("ListTasks %v: %v", req, err)
		}
		for _, tk := range resp.Msg.Tasks {
			out = append(out, tk.Contract.TaskId)
		}
		if resp.Msg.NextPageToken == "" {
			return out
		}
		req.PageToken = resp.Msg.NextPageToken
	}
}

// TestListTasksFilters: each filter, and filters together, list the
// tasks they match and no other, across pages, and never another
// tenant's.
func TestListTasksFilters(t *testing.T) {
	env := stewardtest.NewEnv(t)
	filtered(t, env)
	client, _ := serveState(t, env)
	for _, c := range []struct {
		req  *stewardv1.ListTasksRequest
		want string
	}{
		{&stewardv1.ListTasksRequest{}, "[ledger-a ledger-b mail-c mail-d sub-f]"},
		{&stewardv1.ListTasksRequest{Owner: "user:ann"}, "[ledger-a mail-c]"},
		{&stewardv1.ListTasksRequest{Owner: "user:req"}, "[]"}, // the requester is not the owner
		{&stewardv1.ListTasksRequest{Owner: "user:an"}, "[]"},  // exact
		{&stewardv1.ListTasksRequest{RiskTiers: []stewardv1.RiskTier{stewardv1.RiskTier_RISK_TIER_HIGH, stewardv1.RiskTier_RISK_TIER_CRITICAL}}, "[ledger-b mail-c]"},
		{&stewardv1.ListTasksRequest{Tool: "search"}, "[ledger-a ledger-b]"}, // a bare name and name@version
		{&stewardv1.ListTasksRequest{Tool: "fetch"}, "[mail-c]"},             // an action's tool
		{&stewardv1.ListTasksRequest{Tool: "sear"}, "[]"},
		{&stewardv1.ListTasksRequest{Text: "ledger"}, "[ledger-a ledger-b]"}, // intent, ignoring case; the id
		{&stewardv1.ListTasksRequest{Text: "RÉSUMÉ"}, "[mail-c]"},
		{&stewardv1.ListTasksRequest{Text: "DONE"}, "[ledger-a ledger-b mail-c mail-d sub-f]"}, // the desired outcome
		{&stewardv1.ListTasksRequest{Text: "AIL-"}, "[mail-c mail-d]"},
		{&stewardv1.ListTasksRequest{Owner: "user:bob", Text: "the", Statuses: []stewardv1.TaskStatus{stewardv1.TaskStatus_TASK_STATUS_CANCELLED}}, "[mail-d]"},
		{&stewardv1.ListTasksRequest{Owner: "user:ann", Tool: "email"}, "[]"},
		{&stewardv1.ListTasksRequest{ParentTaskId: "ledger-a"}, "[sub-f]"}, // its sub-tasks
		{&stewardv1.ListTasksRequest{ParentTaskId: "ledger-b"}, "[]"},
	} {
		if got := fmt.Sprint(ids(t, client, c.req)); got != c.want {
			t.Errorf("ListTasks %v lists %s, want %s", c.req, got, c.want)
		}
	}
}

// TestListTasksNamesTheBadFilter: a filter out of bounds, and a page token
// of other filters, are invalid_argument naming the field.
func TestListTasksNamesTheBadFilter(t *testing.T) {
	env := stewardtest.NewEnv(t)
	filtered(t, env)
	client, _ := serveState(t, env)
	ann := &stewardv1.ListTasksRequest{Owner: "user:ann", PageSize: 1}
	first, err := client.ListTasks(context.Background(), connect.NewRequest(ann))
	if err != nil || first.Msg.NextPageToken == "" {
		t.Fatalf("a first page of user:ann's tasks: %v %v", first, err)
	}
	tok := first.Msg.NextPageToken
	unfiltered, err := client.ListTasks(context.Background(), connect.NewRequest(&stewardv1.ListTasksRequest{PageSize: 1}))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", state.MaxFilterText+1)
	for field, req := range map[string]*stewardv1.ListTasksRequest{
		"risk_tiers[1]":  {RiskTiers: []stewardv1.RiskTier{stewardv1.RiskTier_RISK_TIER_LOW, 0}},
		"statuses[0]":    {Statuses: []stewardv1.TaskStatus{99}},
		"owner":          {Owner: strings.Repeat("u", 257)},
		"tool":           {Tool: "search@1.0.0"},
		"text":           {Text: long},
		"parent_task_id": {ParentTaskId: "not a task id"},
		"created_after":  {CreatedAfter: &timestamppb.Timestamp{Seconds: -1 << 62}},
		"created_before": {CreatedAfter: timestamppb.New(time.Unix(100, 0)), CreatedBefore: timestamppb.New(time.Unix(100, 0))},
		"page_token":     {Owner: "user:bob", PageToken: tok},
		// the unfiltered list's token on a filtered list
		"page_token ": {Owner: "user:ann", PageToken: unfiltered.Msg.NextPageToken},
	} {
		_, err := client.ListTasks(context.Background(), connect.NewRequest(req))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), strings.TrimSpace(field)) {
			t.Errorf("ListTasks %v: %v; want invalid_argument naming %s", req, err, field)
		}
	}
	if _, err := client.ListTasks(context.Background(), connect.NewRequest(&stewardv1.ListTasksRequest{Text: long[:2*state.MaxFilterText]})); err != nil {
		t.Errorf("a text of %d characters: %v", state.MaxFilterText, err)
	}
	ann.PageToken = tok
	if next, err := client.ListTasks(context.Background(), connect.NewRequest(ann)); err != nil || len(next.Msg.Tasks) != 1 || next.Msg.Tasks[0].Contract.TaskId != "mail-c" {
		t.Fatalf("the same filters with their token: %v %v; want mail-c", next, err)
	}
}

// TestListTasksCreatedBetween: created_after is inclusive, created_before
// exclusive.
func TestListTasksCreatedBetween(t *testing.T) {
	env := stewardtest.NewEnv(t)
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 4 {
		ev := stewardtest.Event(t, fmt.Sprint("d", i), &stewardv1.TaskCreated{Contract: contract(i)})
		ev.Time = timestamppb.New(day.Add(time.Duration(i) * 24 * time.Hour))
		env.AppendEvents(fmt.Sprint("d", i), ev)
	}
	client, _ := serveState(t, env)
	req := &stewardv1.ListTasksRequest{CreatedAfter: timestamppb.New(day.Add(24 * time.Hour)), CreatedBefore: timestamppb.New(day.Add(3 * 24 * time.Hour))}
	if got := fmt.Sprint(ids(t, client, req)); got != "[d1 d2]" {
		t.Fatalf("tasks created on 2 and 3 March: %s, want [d1 d2]", got)
	}
}

// TestListScansABoundedNumberOfTasks: a filter that matches only the last
// of 25 tasks examines at most scan of them per call; the calls before
// answer empty pages whose positions move on, and another tenant's
// tasks are neither examined nor counted.
func TestListScansABoundedNumberOfTasks(t *testing.T) {
	p := state.NewProjection(slog.New(slog.DiscardHandler))
	seq := uint64(0)
	add := func(id, tenant, intent string) {
		k := contract(0)
		k.Intent = intent
		for _, rec := range stewardtest.History(t, id, &stewardv1.TaskCreated{Contract: k, Tenant: tenant}) {
			seq++
			rec.Sequence = seq
			if err := p.Apply(rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 24 {
		add(fmt.Sprint("t", i), "acme", "ordinary")
		add(fmt.Sprint("g", i), "globex", "needle")
	}
	add("t24", "acme", "the needle")
	f := state.TaskFilter{Text: "NEEDLE"}
	var trail []string
	after := 0
	for {
		page, next := p.List("acme", f, after, 100, 10, rpc.MaxPageBytes, rpc.PageItemBytes)
		var got []string
		for _, tk := range page {
			got = append(got, tk.Contract.TaskId)
		}
		trail = append(trail, fmt.Sprintf("%v@%d", got, next))
		if next == 0 {
			break
		}
		after = next
	}
	if want := []string{"[]@10", "[]@20", "[t24]@0"}; !slices.Equal(trail, want) {
		t.Fatalf("pages of a filter matching acme's last task, 10 tasks examined a call: %v, want %v", trail, want)
	}
}
