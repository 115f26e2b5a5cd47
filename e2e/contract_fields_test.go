package e2e_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestEveryContractFieldIsLive reads the table in docs/contract-fields.md
// and holds it to the protos: every field of a task's and a tool's
// contract, at any depth, has a row, and every row names at least one test
// that exists and shows the field's documented effect, or its refusal. A
// field added to a contract without a row fails here: no field is accepted
// and then silently ignored.
func TestEveryContractFieldIsLive(t *testing.T) {
	rows := contractFieldRows(t, "../docs/contract-fields.md")
	var want []string
	for _, root := range []protoreflect.MessageDescriptor{
		(&stewardv1.TaskContract{}).ProtoReflect().Descriptor(),
		(&stewardv1.ToolContract{}).ProtoReflect().Descriptor(),
		(&stewardv1.ListDeadLettersRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.ReplayDeadLetterRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.ListApprovalsRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.RecordDecisionRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.AttachContextRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.ListDecisionsRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.ListTasksRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.WhoAmIRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.ForkTaskRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.HeartbeatRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.ReportProgressRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.RaiseBudgetRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.DecideApprovalRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.SettleActionRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.ExportBundleRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.MarkProducedRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.ReviseContractRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.DecideContractRevisionRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.CreateScheduleRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.GetScheduleRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.ListSchedulesRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.PauseScheduleRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.ResumeScheduleRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.DeleteScheduleRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.CreateObjectiveRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.CloseObjectiveRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.GetObjectiveRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.ListObjectivesRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.GetTaskTreeRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.RevokeCredentialRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.ListPolicySnapshotsRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.StartRolloutRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.GetRolloutRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.ListRolloutsRequest{}).ProtoReflect().Descriptor(),
		(&stewardv1.RollBackRolloutRequest{}).ProtoReflect().Descriptor(),
	} {
		want = append(want, leafFields(string(root.Name()), root)...)
	}
	for _, f := range want {
		if _, ok := rows[f]; !ok {
			t.Errorf("docs/contract-fields.md has no row for %s: say what it does and which test shows it, or refuse it", f)
		}
	}
	known := map[string]bool{}
	for _, f := range want {
		known[f] = true
	}
	tests := testFuncs(t, "..")
	for field, cited := range rows {
		if !known[field] {
			t.Errorf("docs/contract-fields.md has a row for %s, which is not a contract field", field)
		}
		if len(cited) == 0 {
			t.Errorf("docs/contract-fields.md: %s names no test", field)
		}
		for _, c := range cited {
			if !tests[c] {
				t.Errorf("docs/contract-fields.md: %s cites %s, which does not exist", field, c)
			}
		}
	}
}

// leafFields returns the dotted proto names of md's fields under prefix,
// descending into Steward's own messages; a well-known type (a timestamp,
// a duration) is a leaf, and so are the TaskContract and the Plan of a
// schedule's template: checked by CreateTask's and SubmitPlan's code,
// their fields are those messages' rows. A revision's contract is not: most of its fields are refused.
func leafFields(prefix string, md protoreflect.MessageDescriptor) []string {
	var out []string
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		name := prefix + "." + string(f.Name())
		if f.Kind() == protoreflect.MessageKind && f.Message().ParentFile().Package() == md.ParentFile().Package() &&
			(!checkedAsElsewhere[f.Message().FullName()] || !strings.HasPrefix(prefix, "CreateScheduleRequest.")) {
			out = append(out, leafFields(name, f.Message())...)
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// checkedAsElsewhere are the messages of a schedule's template checked by
// the code that checks them elsewhere, and so answering to its rows: the
// contract CreateTask's, the plan SubmitPlan's.
var checkedAsElsewhere = map[protoreflect.FullName]bool{
	(&stewardv1.TaskContract{}).ProtoReflect().Descriptor().FullName(): true,
	(&stewardv1.Plan{}).ProtoReflect().Descriptor().FullName():         true,
}

// citation is how the table names a test: `path/to/file_test.go:TestName`.
var citation = regexp.MustCompile("`([\\w./-]+_test\\.go):(\\w+)`")

// contractFieldRows reads the table headed "| field | effect | tested by |"
// into field → the tests it cites.
func contractFieldRows(t *testing.T, path string) map[string][]string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case line == "| field | effect | tested by |":
			in = true
		case in && strings.HasPrefix(line, "| ---"):
		case in && strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), " | ")
			if len(cells) != 3 {
				t.Fatalf("%s: a row of the fields table has %d cells, not 3: %s", path, len(cells), line)
			}
			field := strings.Trim(strings.TrimSpace(cells[0]), "`")
			if _, dup := rows[field]; dup {
				t.Errorf("%s: two rows for %s", path, field)
			}
			var cited []string
			for _, m := range citation.FindAllStringSubmatch(cells[2], -1) {
				cited = append(cited, m[1]+":"+m[2])
			}
			rows[field] = cited
		default:
			in = false
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no fields table", path)
	}
	return rows
}

// testFuncs returns every "file:TestName" of the module's test files, the
// file relative to root.
func testFuncs(t *testing.T, root string) map[string]bool {
	out := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "bench") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				out[filepath.ToSlash(rel)+":"+fn.Name.Name] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
