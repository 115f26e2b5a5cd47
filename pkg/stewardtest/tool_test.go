package stewardtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/stewardtest"
)

func post(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"target":"x","params":{"a":1}}`))
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func status(t *testing.T, tool *stewardtest.Tool, key string) string {
	t.Helper()
	resp, err := http.Get(tool.URL + "/status?op_key=" + key)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct{ State string }
	_ = json.NewDecoder(resp.Body).Decode(&s)
	return s.State
}

// TestTheReferenceToolWorksOncePerKeyAndFollowsItsScript: a scripted
// failure does no work, a repeat gets the first result, a tool that
// ignores keys works again, and the status query tells the truth.
func TestTheReferenceToolWorksOncePerKeyAndFollowsItsScript(t *testing.T) {
	tool := stewardtest.StartTool(t).Script("/call", stewardtest.Fail(503)).ScriptPerKey("/flaky", stewardtest.Fail(503))
	if code, _ := post(t, tool.URL+"/call", "k1"); code != 503 {
		t.Fatalf("first call answered %d, want the scripted 503", code)
	}
	if got := status(t, tool, "k1"); got != "not_accepted" {
		t.Fatalf("status after a refusal = %q, want not_accepted", got)
	}
	_, first := post(t, tool.URL+"/call", "k1")
	_, again := post(t, tool.URL+"/call", "k1")
	if first != again || tool.Executions("k1") != 1 || tool.CallsFor("k1") != 3 {
		t.Fatalf("repeat answered %s after %s; %d executions of %d calls, want 1 of 3", again, first, tool.Executions("k1"), tool.CallsFor("k1"))
	}
	if got := status(t, tool, "k1"); got != "succeeded" || tool.Asks("k1") != 2 {
		t.Fatalf("status after the work = %q (%d asks), want succeeded (2)", got, tool.Asks("k1"))
	}
	for _, k := range []string{"a", "b"} {
		if code, _ := post(t, tool.URL+"/flaky", k); code != 503 {
			t.Fatalf("first call with key %s to /flaky answered %d, want 503", k, code)
		}
		if code, _ := post(t, tool.URL+"/flaky", k); code != 200 {
			t.Fatalf("second call with key %s to /flaky answered %d, want 200", k, code)
		}
	}
	tool.IgnoreKeys()
	post(t, tool.URL+"/call", "k1")
	if n := tool.Executions("k1"); n != 2 {
		t.Fatalf("a tool that ignores keys worked %d times for k1, want 2", n)
	}
	if w := tool.Worked(); len(w) != 4 || w[1].Key != "a" || w[1].Target != "x" {
		t.Fatalf("worked = %+v", w)
	}
}

// TestTheReferenceToolHoldsDropsAndOverridesAsTold: a held answer waits
// for Release, a Late one for the caller to give up (having done the
// work), a dropped call gets no answer, Always repeats, and AnswerStatus
// replaces the truth.
func TestTheReferenceToolHoldsDropsAndOverridesAsTold(t *testing.T) {
	tool := stewardtest.StartTool(t).
		Always("/held", stewardtest.Answer{Code: 503, Hold: stewardtest.HoldUntilRelease}).
		Always("/late", stewardtest.Late).
		Always("/drop", stewardtest.Answer{Drop: true})
	held := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, tool.URL+"/held", strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "h")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			held <- 0
			return
		}
		resp.Body.Close()
		held <- resp.StatusCode
	}()
	stewardtest.Eventually(t, 5*time.Second, func() (bool, string) { return tool.CallsTo("/held") == 1, "the held call has not arrived" })
	select {
	case code := <-held:
		t.Fatalf("a held call answered %d before the release", code)
	default:
	}
	tool.Release()
	if code := <-held; code != 503 {
		t.Fatalf("the held call answered %d after the release, want 503", code)
	}

	client := &http.Client{Timeout: 100 * time.Millisecond}
	for _, path := range []string{"/late", "/late", "/drop"} {
		req, _ := http.NewRequest(http.MethodPost, tool.URL+path, strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "l")
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("%s answered %d, want no answer", path, resp.StatusCode)
		}
	}
	if tool.Executions("l") != 1 || tool.CallsTo("/late") != 2 || tool.CallsTo("/drop") != 1 {
		t.Fatalf("late: %d executions of %d calls, %d dropped; want 1 of 2, 1", tool.Executions("l"), tool.CallsTo("/late"), tool.CallsTo("/drop"))
	}
	if got := status(t, tool, "l"); got != "succeeded" {
		t.Fatalf("status of the late work = %q, want succeeded", got)
	}
	tool.AnswerStatus(stewardtest.Answer{Body: `{"state":"in_progress"}`})
	if got := status(t, tool, "l"); got != "in_progress" {
		t.Fatalf("overridden status = %q, want in_progress", got)
	}
}

// TestToolGathers: calls to a gathered path wait until two keys are in
// flight together, and the tool says so.
func TestToolGathers(t *testing.T) {
	tool := stewardtest.StartTool(t).Gather("/branch", 2)
	done := make(chan int, 2)
	for _, key := range []string{"k1", "k2"} {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, tool.URL+"/branch", strings.NewReader(`{}`))
			req.Header.Set("Idempotency-Key", key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- 0
				return
			}
			_ = resp.Body.Close()
			done <- resp.StatusCode
		}()
	}
	for range 2 {
		if code := <-done; code != http.StatusOK {
			t.Fatalf("a gathered call answered %d", code)
		}
	}
	if n := tool.Together("/branch"); n != 2 {
		t.Fatalf("Together = %d, want 2", n)
	}
	if n := tool.Together("/other"); n != 0 {
		t.Fatalf("Together of an uncalled path = %d", n)
	}
}
