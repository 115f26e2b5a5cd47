package e2e_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// a2aClientDir is the independent A2A client's package (@a2a-js/sdk),
// installed by npm ci there when missing (.ci/run installs it).
func a2aClientDir(t *testing.T) string {
	t.Helper()
	requireTools(t, "node", "npm")
	dir, err := filepath.Abs(filepath.Join("testdata", "a2a-client"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		runNode(ctx, t, dir, nil, "npm", "ci", "--no-audit", "--no-fund")
	}
	return dir
}

// TestA2AClientOfAnotherImplementation is issue 35's "done when" for A2A:
// the npm @a2a-js/sdk client, against the real binary, opens a task under
// a skill and follows it by streaming while its agent works it over the
// Connect API; the agent's question ends the stream at input-required,
// with the question; the client answers with a message to the task and
// follows it to completed, seeing the artifact on the way; tasks/get then
// gives the artifact's bytes.
func TestA2AClientOfAnotherImplementation(t *testing.T) {
	dir := a2aClientDir(t)
	h := startSteward(t, setup{flags: []string{"--a2a-skills", a2aSkills}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	question, answer, summary := "Which region should it cover?", "EU only", "# Incidents\n\nThree, all in the EU.\n"
	cmd := exec.CommandContext(ctx, "node", "client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "STEWARD_URL="+h.url, "STEWARD_TOKEN="+ownerToken, "A2A_ANSWER="+answer)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	var seen []string
	// next reads the client's lines until one starts with prefix.
	next := func(prefix string) string {
		t.Helper()
		for lines.Scan() {
			seen = append(seen, lines.Text())
			if strings.HasPrefix(lines.Text(), prefix) {
				return lines.Text()
			}
		}
		t.Fatalf("the client ended before a line %q: %q; stderr:\n%s", prefix, seen, stderr.String())
		return ""
	}

	taskID := strings.Fields(next("task "))[1]
	waitServed(t, h.agent.clients, taskID, 20*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return tk.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING && tk.Credential != nil, tk.Status.String()
	})
	if _, err := h.agent.tasks.RequestInput(ctx, connect.NewRequest(&stewardv1.RequestInputRequest{TaskId: taskID, Question: question, RequestId: "ask"})); err != nil {
		t.Fatal(err)
	}
	next("resubscribed")
	waitServed(t, h.agent.clients, taskID, 20*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return tk.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING && tk.OpenInput == nil, tk.Status.String()
	})
	// The answer is the A2A message's text, given as the caller.
	timeline, err := h.agent.query.GetTimeline(ctx, connect.NewRequest(&stewardv1.GetTimelineRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(timeline.Msg.Entries, func(e *stewardv1.TimelineEntry) bool {
		return strings.Contains(e.Summary, answer) && strings.Contains(e.Actor, "user:owner")
	}) {
		t.Fatalf("no answer %q by user:owner in the timeline: %v", answer, timeline.Msg.Entries)
	}
	if _, err := h.agent.tasks.SubmitArtifact(ctx, connect.NewRequest(&stewardv1.SubmitArtifactRequest{TaskId: taskID, Name: "summary.md", MediaType: "text/markdown", Content: []byte(summary)})); err != nil {
		t.Fatal(err)
	}
	if _, err := h.agent.tasks.MarkProduced(ctx, connect.NewRequest(&stewardv1.MarkProducedRequest{TaskId: taskID})); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
		seen = append(seen, lines.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the client: %v: %q; stderr:\n%s", err, seen, stderr.String())
	}
	t.Logf("the client saw:\n%s", strings.Join(seen, "\n"))

	// The states, in order, each once where it changed.
	var states []string
	for _, l := range seen {
		f := strings.Fields(l)
		switch {
		case f[0] == "task" && len(f) == 3:
			states = append(states, f[2])
		case f[0] == "state":
			states = append(states, f[1])
		}
	}
	states = slices.Compact(states)
	if states[0] == "submitted" {
		states = states[1:] // whether the first event comes before the task starts is a race
	}
	want := []string{"working", "input-required", "working", "completed"}
	if !slices.Equal(states, want) {
		t.Fatalf("states %q, want %q", states, want)
	}
	wantLines := []string{
		"card 0.3.0 summarise,triage",
		"state input-required " + question,
		"artifact summary.md " + strconv.Quote(summary),
		"read completed summary.md " + strconv.Quote(summary),
	}
	for _, l := range wantLines {
		if !slices.Contains(seen, l) {
			t.Errorf("no line %q", l)
		}
	}
}
