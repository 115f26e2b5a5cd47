package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/steward-run/steward/pkg/gen/steward/v1" // registers the services walked below
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// The matrix's tasks are of matrixTenant; its other callers, the same
// principals with the same roles, of otherTenant.
const (
	matrixTenant = "acme"
	otherTenant  = "globex"
)

// matrixCallers are the columns of docs/authorization.md.
var matrixCallers = []struct {
	column, principal string
	roles             []string
}{
	{"anyone", "user:cy", nil},
	{"agent", "agent:summariser", nil},
	{"owner", "user:ana", nil},
	{"acceptor", "user:rev", nil},
	{"operator", "user:ops", []string{"operator"}},
	{"budget-owner", "user:fin", []string{"budget-owner"}},
	{"tool-admin", "user:tools", []string{"tool-admin"}},
	{"auditor", "user:aud", []string{"auditor"}},
	{"approver", "user:bo", []string{"authorizer"}},
	{"admin", "user:root", []string{"admin"}},
}

// matrixCell is one cell of the table: the answer to a caller of the
// task's tenant, and to one of another.
type matrixCell struct{ same, other string }

// TestAuthorizationMatrix runs every RPC as every caller of
// docs/authorization.md, of the task's tenant and of another, against the
// real binary, the callers signing in with JWTs of a test key, and checks
// each answer against its cell. The table must have a row for every RPC
// the generated services serve, and no other.
func TestAuthorizationMatrix(t *testing.T) {
	columns, rows := readMatrix(t, "../docs/authorization.md")
	var known []string
	for _, c := range matrixCallers {
		known = append(known, c.column)
	}
	if !slices.Equal(columns, known) {
		t.Fatalf("docs/authorization.md has the columns %v; the test knows the callers %v", columns, known)
	}
	served := servedProcedures(t)
	for _, p := range served {
		if _, ok := rows[p]; !ok {
			t.Errorf("%s has no row in docs/authorization.md", short(p))
		}
		if _, ok := matrixCalls[p]; !ok {
			t.Errorf("%s has no call in matrixCalls: say how the matrix calls it", short(p))
		}
	}
	for p := range rows {
		if !slices.Contains(served, p) {
			t.Errorf("docs/authorization.md has a row for %s, which no service serves", short(p))
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	const issuer = "https://id.example.test"
	idp := stewardtest.NewJWTIssuer(t, issuer, "steward", "matrix-key")
	m := newMatrix(t, startTableEnv(t, "--jwt-jwks", idp.WriteJWKS(t, t.TempDir()), "--jwt-issuer", issuer, "--jwt-audience", "steward",
		"--credential-ttl", "1h"), idp)
	// Each row runs in a goroutine of its own, a few at a time: most of
	// its time is spent waiting for the binary.
	var wg sync.WaitGroup
	slots := make(chan struct{}, 8)
	for _, p := range served {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			t.Run(short(p), func(t *testing.T) { m.checkRow(t, p, rows[p], matrixCalls[p]) })
		})
	}
	wg.Wait()
}

// checkRow calls procedure, as mc says, as every caller of both tenants,
// all at once, and reports every answer that is not its cell's.
func (m *matrix) checkRow(t *testing.T, procedure string, row map[string]matrixCell, mc matrixCall) {
	type cellCall struct {
		column, tenant, want, name string
		c                          matrixCaller
		s                          subject
	}
	var calls []cellCall
	for _, col := range matrixCallers {
		cell := row[col.column]
		for _, tenant := range []string{matrixTenant, otherTenant} {
			want, s := cell.same, m.shared[mc.state]
			if tenant == otherTenant {
				want = cell.other
			}
			name := strings.ToLower(path.Base(t.Name())) + "-" + col.column + "-" + tenant
			if mc.changes && want == "ok" && mc.state != "" {
				s = m.build(t, mc.state, "task-"+name) // one of its own: the call changes it
			}
			calls = append(calls, cellCall{col.column, tenant, want, name, m.callers[tenant][col.column], s})
		}
	}
	got := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { got[i] = mc.call(context.Background(), c.c, c.s, c.name) })
	}
	wg.Wait()
	for i, c := range calls {
		answer := classify(got[i])
		switch {
		case answer != c.want:
			t.Errorf("%s by %s of %s: want %s, got %s (%v)", short(procedure), c.column, c.tenant, c.want, answer, got[i])
		case answer == "ok" && got[i] != nil:
			// A valid call that fails for another reason would hide
			// whether a check further on lets the caller through.
			t.Errorf("%s by %s of %s: passed, but the call the matrix makes valid failed: %v", short(procedure), c.column, c.tenant, got[i])
		}
	}
}

// errLeftOut is what a list call answers when the list leaves the
// matrix's task out; errBlanked, what a read answers when the task or
// action it serves lacks the result it carries inline.
var (
	errLeftOut = errors.New("the list leaves the task out")
	errBlanked = errors.New("the action's result inline is blanked")
)

// classify names an answer as docs/authorization.md does.
func classify(err error) string {
	switch {
	case errors.Is(err, errLeftOut):
		return "filtered"
	case errors.Is(err, errBlanked):
		return "blanked"
	case err == nil:
		return "ok"
	}
	switch connect.CodeOf(err) {
	case connect.CodePermissionDenied:
		return "denied"
	case connect.CodeNotFound:
		return "not_found"
	case connect.CodeUnauthenticated:
		return "unauthenticated"
	}
	return "ok"
}

// readMatrix returns the callers the table at path names, in order, and
// its cells by procedure and caller.
func readMatrix(t *testing.T, path string) ([]string, map[string]map[string]matrixCell) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"ok", "denied", "not_found", "filtered", "blanked"}
	var columns []string
	rows := map[string]map[string]matrixCell{}
	for _, line := range strings.Split(string(data), "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		switch {
		case strings.HasPrefix(line, "| RPC |"):
			columns = cells[1:]
		case columns == nil || strings.HasPrefix(line, "| ---"):
		case !strings.HasPrefix(line, "|"):
			if len(rows) > 0 {
				return columns, rows
			}
		default:
			rpc := strings.Trim(cells[0], "`")
			if len(cells) != len(columns)+1 {
				t.Fatalf("%s: the row of %s has %d cells, want %d", path, rpc, len(cells)-1, len(columns))
			}
			row := map[string]matrixCell{}
			for i, cell := range cells[1:] {
				same, other, both := strings.Cut(cell, " / ")
				if !both {
					other = same
				}
				if !slices.Contains(words, same) || !slices.Contains(words, other) {
					t.Fatalf("%s: %s, %s: %q is not a cell (%s, or two of them: same / other)", path, rpc, columns[i], cell, strings.Join(words, ", "))
				}
				row[columns[i]] = matrixCell{same, other}
			}
			rows["/steward.v1."+rpc] = row
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no table headed | RPC |", path)
	}
	return columns, rows
}

// servedProcedures returns every procedure of every steward.v1 service
// the generated code registers: a new RPC shows up here by itself.
func servedProcedures(t *testing.T) []string {
	t.Helper()
	var out []string
	protoregistry.GlobalFiles.RangeFilesByPackage("steward.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			svc := fd.Services().Get(i)
			for j := range svc.Methods().Len() {
				out = append(out, fmt.Sprintf("/%s/%s", svc.FullName(), svc.Methods().Get(j).Name()))
			}
		}
		return true
	})
	if len(out) < 30 {
		t.Fatalf("found %d procedures: are the services registered?", len(out))
	}
	slices.Sort(out)
	return out
}

// short turns "/steward.v1.TaskService/PauseTask" into "TaskService/PauseTask".
func short(procedure string) string { return strings.TrimPrefix(procedure, "/steward.v1.") }

// matrixCaller is one caller's clients of every service.
type matrixCaller struct {
	authed
	actions     stewardv1connect.ActionServiceClient
	tools       stewardv1connect.ToolServiceClient
	deadLetters stewardv1connect.DeadLetterServiceClient
	rollouts    stewardv1connect.RolloutServiceClient
	// toolAdmin is the tools client of the caller's tenant's tool admin,
	// who registers the versions a rollout call needs (authorization_rollout_test.go).
	toolAdmin stewardv1connect.ToolServiceClient
}
