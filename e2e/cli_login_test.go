package e2e_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/event"
)

// TestCLILogin: `steward login` refuses a token Steward does not take and
// saves nothing; with a good one it writes the config file, readable by
// its owner alone, and the people's commands then need no flags. The
// environment wins over the file, and the file's token never goes to
// another address.
func TestCLILogin(t *testing.T) {
	h := startSteward(t, setup{})
	id := h.create(t, "cli-login-1", contract())
	me := newPerson(t, "", "")
	config := strings.TrimPrefix(me.env[0], "STEWARD_CONFIG=")

	if _, stderr := me.run(4, "login", "--addr", h.url, "--token", "not-a-token-0123456789"); !strings.Contains(stderr, "nothing saved") {
		t.Errorf("login with a bad token: %s", stderr)
	}
	if _, err := os.Stat(config); !os.IsNotExist(err) {
		t.Fatalf("a refused login wrote %s: %v", config, err)
	}
	me.run(2, "login", "--token", operatorToken)
	if out, _ := me.run(0, "login", "--addr", h.url, "--token", operatorToken); !strings.Contains(out, "saved "+h.url) {
		t.Errorf("login printed %q", out)
	}
	info, err := os.Stat(config)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the config file: %v, %v; want it readable by its owner alone", info, err)
	}
	data, _ := os.ReadFile(config)
	var saved struct{ Addr, Token string }
	if err := json.Unmarshal(data, &saved); err != nil || saved.Addr != h.url || saved.Token != operatorToken {
		t.Fatalf("the config file holds %s (%v)", data, err)
	}

	me.run(0, "tasks", "pause", id, "--reason", "from the config")
	if ev := lastOfType(t, h, id, event.TypeTaskPaused); ev.Actor.GetPrincipal() != "user:ops" {
		t.Fatalf("a pause with the saved token is %v, want user:ops's", ev)
	}
	// The older commands that call Steward read the same file.
	if out, _ := me.run(0, "receipt", "--task", id); !strings.Contains(out, id) {
		t.Errorf("the receipt with the saved address and token:\n%s", out)
	}
	if out, _ := me.run(0, "audit", "verify", "--task", id); !strings.Contains(out, "chain") {
		t.Errorf("audit verify with the saved address and token:\n%s", out)
	}
	admin := me
	admin.env = append(admin.env, "STEWARD_TOKEN="+adminToken)
	admin.run(0, "tasks", "resume", id)
	if ev := lastOfType(t, h, id, event.TypeTaskResumed); ev.Actor.GetPrincipal() != "user:root" {
		t.Fatalf("a resume with $STEWARD_TOKEN is %v, want user:root's", ev)
	}
	// The same server under another name is another address: the saved
	// token does not go there.
	elsewhere := me
	elsewhere.env = append(elsewhere.env, "STEWARD_ADDR="+strings.Replace(h.url, "127.0.0.1", "localhost", 1))
	if _, stderr := elsewhere.run(4, "tasks", "pause", id); !strings.Contains(stderr, "unauthenticated") {
		t.Errorf("the saved token went to another address: %s", stderr)
	}
	if _, stderr := elsewhere.run(1, "receipt", "--task", id); !strings.Contains(stderr, "unauthenticated") {
		t.Errorf("the saved token went to another address with receipt: %s", stderr)
	}
}

// TestCLICompletion: `steward completion bash|zsh|fish` prints each
// shell's script, and the completion they call offers the commands, the
// verbs and the ids Steward has.
func TestCLICompletion(t *testing.T) {
	h := startSteward(t, setup{})
	id := h.create(t, "cli-complete-1", contract())
	me := newPerson(t, "", "")
	for shell, want := range map[string]string{"bash": "__start_steward", "zsh": "#compdef steward", "fish": "complete -c steward"} {
		if out, _ := me.run(0, "completion", shell); !strings.Contains(out, want) {
			t.Errorf("completion %s does not hold %q", shell, want)
		}
	}
	if out, _ := me.run(0, "__complete", ""); !strings.Contains(out, "tasks\t") || !strings.Contains(out, "dev\t") || !strings.Contains(out, "approvals\t") {
		t.Errorf("the commands offered:\n%s", out)
	}
	if out, _ := me.run(0, "__complete", "tasks", "p"); !strings.Contains(out, "pause\t") {
		t.Errorf("the verbs offered for 'tasks p':\n%s", out)
	}
	if out, _ := me.run(0, "__complete", "tasks", "pause", "--addr", h.url, "--token", operatorToken, ""); !strings.Contains(out, id+"\trunning: ") {
		t.Errorf("the tasks offered for 'tasks pause':\n%s", out)
	}
}
