package e2e_test

import (
	"bufio"
	"maps"
	"os"
	"regexp"
	"strings"
	"testing"

	"connectrpc.com/connect"
)

// tableCheck performs the calls one row of the "Errors and limits" table
// describes and returns their errors in the order the row's answer names
// Connect codes. A row whose answer names no code asserts the outcome it
// describes itself and returns nil.
type tableCheck func(t *testing.T, e *harness) []error

// TestErrorsTableMatchesTheCode reads the table in docs/errors.md and
// checks every row against one real server: each error a row's check
// provokes must carry the Connect code the row names, in order. A row
// without a check, or a check without a row, fails the test, so the
// table and the code cannot drift apart.
func TestErrorsTableMatchesTheCode(t *testing.T) {
	rows := readErrorsTable(t, "../docs/errors.md")
	checks := errorsTableChecks()
	maps.Copy(checks, inputChecks())
	maps.Copy(checks, boundsChecks())
	maps.Copy(checks, deadlineChecks())
	maps.Copy(checks, askingChecks())
	maps.Copy(checks, contentChecks())
	maps.Copy(checks, pinChecks())
	maps.Copy(checks, toolChecks())
	maps.Copy(checks, secretKeyChecks())
	maps.Copy(checks, planChecks())
	maps.Copy(checks, deadLetterChecks())
	maps.Copy(checks, startChecks())
	maps.Copy(checks, quotaChecks())
	maps.Copy(checks, decisionChecks())
	for _, r := range rows {
		if _, ok := checks[r.input]; !ok {
			t.Errorf("docs/errors.md has the row %q, which no check covers: add an entry for it to errorsTableChecks (e2e/errors_table_checks_test.go) or inputChecks (e2e/errors_table_input_test.go)", r.input)
		}
	}
	documented := map[string]bool{}
	for _, r := range rows {
		documented[r.input] = true
	}
	for input := range checks {
		if !documented[input] {
			t.Errorf("errorsTableChecks has a check for %q, which is no longer a row of docs/errors.md: remove it, or fix its key", input)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	e := startTableEnv(t)
	for _, r := range rows {
		t.Run(r.input, func(t *testing.T) {
			got := checks[r.input](t, e)
			if len(got) != len(r.codes) {
				t.Fatalf("the answer names %d codes %v, the check returned %d errors %v", len(r.codes), r.codes, len(got), got)
			}
			for i, want := range r.codes {
				if c := connect.CodeOf(got[i]); got[i] == nil || c != want {
					t.Errorf("call %d: %v, want %v", i+1, got[i], want)
				}
			}
		})
	}
}

// tableRow is one row of the table: its input text, and the Connect codes
// its answer names, in order.
type tableRow struct {
	input  string
	answer string
	codes  []connect.Code
}

var backticked = regexp.MustCompile("`([^`]+)`")

// readErrorsTable parses the `| input | answer |` table of path. "as
// above" in an answer stands for the codes of the row before.
func readErrorsTable(t *testing.T, path string) []tableRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]connect.Code{}
	for c := connect.Code(1); c <= 16; c++ {
		names[c.String()] = c
	}
	var rows []tableRow
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "| input | answer |":
			in = true
			continue
		case !in:
			continue
		case !strings.HasPrefix(line, "|"):
			in = false
			continue
		case strings.HasPrefix(line, "| ---"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 2 {
			t.Fatalf("%s: a row with %d cells: %s", path, len(cells), line)
		}
		r := tableRow{input: strings.TrimSpace(cells[0]), answer: strings.TrimSpace(cells[1])}
		if strings.HasPrefix(r.answer, "as above") && len(rows) > 0 {
			r.codes = append(r.codes, rows[len(rows)-1].codes...)
		}
		for _, m := range backticked.FindAllStringSubmatch(r.answer, -1) {
			if c, ok := names[m[1]]; ok {
				r.codes = append(r.codes, c)
			}
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 10 {
		t.Fatalf("%s: found %d rows; is the table still headed | input | answer |?", path, len(rows))
	}
	return rows
}
