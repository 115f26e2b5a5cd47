package e2e_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// person runs the people's commands of the steward binary (docs/cli.md)
// against one Steward with one token: an operator, an approver.
type person struct {
	t          *testing.T
	url, token string
	// env is added to the binary's environment; it always names a config
	// file of the test's own, so that no one's real config is read.
	env []string
}

func newPerson(t *testing.T, url, token string) person {
	return person{t: t, url: url, token: token, env: []string{"STEWARD_CONFIG=" + filepath.Join(t.TempDir(), "config.json")}}
}

// run runs `steward ARGS --addr URL --token TOKEN`, wants the exit code
// want, and returns what it printed on stdout and on stderr.
func (p person) run(want int, args ...string) (stdout, stderr string) {
	p.t.Helper()
	if p.url != "" {
		args = append(args, "--addr", p.url)
	}
	if p.token != "" {
		args = append(args, "--token", p.token)
	}
	return runBinary(p.t, p.env, want, args...)
}

// runBinary runs the binary with args and env added, and wants the exit
// code want.
func runBinary(t *testing.T, env []string, want int, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if code := exitCode(t, cmd); code != want {
		t.Fatalf("steward %v exited %d, want %d:\nstdout: %s\nstderr: %s", args, code, want, out.String(), errs.String())
	}
	return out.String(), errs.String()
}

// exitCode runs cmd and returns its exit code.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}

// follower is a command left running, such as `steward tasks watch`,
// whose output lines a test waits on.
type follower struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	done  chan error
}

func (p person) follow(args ...string) *follower {
	p.t.Helper()
	cmd := exec.Command(binary, append(args, "--addr", p.url, "--token", p.token)...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stderr = &testWriter{tb: p.t}
	out, err := cmd.StdoutPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	f := &follower{cmd: cmd, done: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { _ = cmd.Process.Kill(); <-f.done })
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			f.mu.Lock()
			f.lines = append(f.lines, sc.Text())
			f.mu.Unlock()
		}
		f.done <- cmd.Wait()
		close(f.done)
	}()
	return f
}

// printed returns the lines printed so far.
func (f *follower) printed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lines...)
}

// events returns the event records a `watch -o json` printed so far.
func (f *follower) events(t *testing.T) []*stewardv1.EventRecord {
	t.Helper()
	var recs []*stewardv1.EventRecord
	for _, line := range f.printed() {
		var rec stewardv1.EventRecord
		if err := protojson.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("watch -o json printed a line that is not an EventRecord: %v\n%s", err, line)
		}
		recs = append(recs, &rec)
	}
	return recs
}

// waitFor waits until f has printed an event of type typ.
func (f *follower) waitFor(t *testing.T, typ string) {
	t.Helper()
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		return countType(f.events(t), typ) > 0, "the watch printed no " + typ + ": " + strings.Join(f.printed(), "\n")
	})
}

// lastOfType returns the last event of type typ on the task's log, read
// by an auditor, and fails the test when there is none.
func lastOfType(t *testing.T, h *harness, taskID, typ string) *stewardv1.Event {
	t.Helper()
	var last *stewardv1.Event
	for _, rec := range replayTask(t, withToken(h.url, adminToken).clients, taskID) {
		if rec.Event.GetType() == typ {
			last = rec.Event
		}
	}
	if last == nil {
		t.Fatalf("task %s has no %s event", taskID, typ)
	}
	return last
}

// TestCLITasks steers tasks with `steward tasks` as an operator and finds
// each command's event on the task's log, with the operator as its actor
// and the reason given; `watch` follows them live and stops when the task
// ends; ls and show find the task, as tables and as one JSON object a
// line.
func TestCLITasks(t *testing.T) {
	h := startSteward(t, setup{})
	ops := newPerson(t, h.url, operatorToken)
	id := h.create(t, "cli-tasks-1", contract())

	out, _ := ops.run(0, "tasks", "ls", "-o", "json")
	found := false
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var task stewardv1.Task
		if err := protojson.Unmarshal([]byte(line), &task); err != nil {
			t.Fatalf("tasks ls -o json: a line is not a Task: %v\n%s", err, line)
		}
		found = found || task.Contract.GetTaskId() == id
	}
	if !found {
		t.Fatalf("tasks ls -o json does not list %s:\n%s", id, out)
	}
	if out, _ := ops.run(0, "tasks", "ls", "--status", "running"); !strings.Contains(out, id+"  running") || !strings.HasPrefix(out, "TASK ") {
		t.Fatalf("tasks ls --status running does not show %s running under a header:\n%s", id, out)
	}
	if out, _ := ops.run(0, "tasks", "show", id); !strings.Contains(out, "status:    running") || !strings.Contains(out, "intent:    Summarise last week's incidents") {
		t.Fatalf("tasks show:\n%s", out)
	}

	watch := ops.follow("tasks", "watch", id, "-o", "json")
	watch.waitFor(t, event.TypeTaskStarted)
	for _, step := range []struct{ verb, typ string }{
		{"pause", event.TypeTaskPaused}, {"resume", event.TypeTaskResumed}, {"cancel", event.TypeTaskCancelled},
	} {
		out, _ := ops.run(0, "tasks", step.verb, id, "--reason", "cli "+step.verb)
		ev := lastOfType(t, h, id, step.typ)
		if ev.Actor.GetPrincipal() != "user:ops" || !strings.Contains(protojson.Format(ev), "cli "+step.verb) {
			t.Errorf("tasks %s: its event is %v, want one by user:ops with the reason", step.verb, ev)
		}
		watch.waitFor(t, step.typ)
		if !strings.HasPrefix(out, "task "+id+" is ") {
			t.Errorf("tasks %s printed %q", step.verb, out)
		}
	}
	if err := <-watch.done; err != nil {
		t.Fatalf("the watch did not end by itself when the task was cancelled: %v", err)
	}
	seqs := watch.events(t)
	for i := 1; i < len(seqs); i++ {
		if seqs[i].Sequence <= seqs[i-1].Sequence {
			t.Fatalf("the watch printed events out of order or twice: %d after %d", seqs[i].Sequence, seqs[i-1].Sequence)
		}
	}

	other := h.create(t, "cli-tasks-2", contract())
	ops.run(0, "tasks", "fail", other, "--reason", "cli fail")
	if ev := lastOfType(t, h, other, event.TypeTaskFailed); ev.Actor.GetPrincipal() != "user:ops" {
		t.Errorf("tasks fail: %v", ev)
	}
	_, stderr := ops.run(4, "tasks", "pause", other)
	if !strings.Contains(stderr, "steward: pause "+other+": failed_precondition: ") {
		t.Errorf("pausing a failed task: exit 4, but it says %q", stderr)
	}
	ops.run(2, "tasks", "pause")
	ops.run(2, "tasks", "ls", "-o", "yaml")
}

// TestCLIWatchGoesOnAfterARestart: `steward tasks watch` follows a task
// while the binary is killed and started again on the same data and
// address; the pause made after the restart reaches the watch, which
// prints every event of the task once, in order, and ends with it.
func TestCLIWatchGoesOnAfterARestart(t *testing.T) {
	dir := t.TempDir()
	flags := []string{"--addr", stewardtest.FreeAddr(t), "--auth", writeFile(t, dir, "tokens.json", tokensFile)}
	p := startBinary(t, filepath.Join(dir, "data"), flags...)
	agent := withToken(p.url, agentToken)
	id := createTask(t, agent.clients, "cli-watch-restart").Contract.TaskId
	waitStarted(t, agent.clients, id)
	ops := newPerson(t, p.url, operatorToken)
	watch := ops.follow("tasks", "watch", id, "-o", "json")
	watch.waitFor(t, event.TypeTaskStarted)

	p.kill()
	if again := startBinary(t, filepath.Join(dir, "data"), flags...); again.url != p.url {
		t.Fatalf("restarted at %s, not %s", again.url, p.url)
	}
	ops.run(0, "tasks", "pause", id)
	watch.waitFor(t, event.TypeTaskPaused)
	ops.run(0, "tasks", "cancel", id)
	if err := <-watch.done; err != nil {
		t.Fatalf("the watch did not end with the task: %v", err)
	}
	seen, all := watch.events(t), replayTask(t, withToken(p.url, adminToken).clients, id)
	if len(seen) != len(all) {
		t.Fatalf("the watch printed %d events across the restart, the log holds %d", len(seen), len(all))
	}
	for i := range all {
		if seen[i].Sequence != all[i].Sequence || seen[i].Event.GetEventId() != all[i].Event.GetEventId() {
			t.Fatalf("event %d: the watch printed %d %s, the log holds %d %s", i, seen[i].Sequence, seen[i].Event.GetType(), all[i].Sequence, all[i].Event.GetType())
		}
	}
}
