package e2e_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestCLITools registers tools with `steward tools register` as a
// tool-admin and finds them in the server's registry, in the
// tool-admin's name, read by an agent; `ls` and `show` print them, as
// tables and as one Tool a line; the same contract again registers
// nothing new; an agent, a contract the server refuses and a file that
// is not a contract are refused with the exit codes docs/cli.md gives.
func TestCLITools(t *testing.T) {
	h := startSteward(t, setup{})
	admin := newPerson(t, h.url, toolAdminToken)
	dir := t.TempDir()
	one := writeFile(t, dir, "echo.json", `{"name": "echo", "version": "1", "description": "says it back\u001b[2J",
	  "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_PUBLIC", "http": {"url": "http://127.0.0.1:9/call"}}`)
	file := writeFile(t, dir, "tools.json", `{"tools": [
	  {"name": "shout", "version": "2", "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
	   "idempotency": {"honoursKey": true}, "builtin": {"kind": "noop"}},
	  {"name": "whisper", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_PUBLIC", "builtin": {"kind": "noop"}}]}`)

	if out, _ := admin.run(0, "tools", "register", one); out != "tool echo@1 is registered (global)\n" {
		t.Fatalf("tools register printed %q", out)
	}
	out, _ := admin.run(0, "tools", "register", file, "-o", "json")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 {
		t.Fatalf("tools register of a tools file: want a Tool a line, two lines:\n%s", out)
	}
	registry := registeredTools(t, h.url)
	for _, name := range []string{"echo", "shout", "whisper"} {
		if tool := registry[name]; tool.GetRegisteredBy() != "user:tools" {
			t.Errorf("the server lists %s as %v, want it registered by user:tools", name, tool)
		}
	}
	if out, _ := admin.run(0, "tools", "register", one); !strings.Contains(out, "was registered already") {
		t.Errorf("registering the same contract again printed %q", out)
	}

	agent := newPerson(t, h.url, agentToken)
	if out, _ := agent.run(0, "tools", "ls"); !strings.HasPrefix(out, "TOOL ") || !strings.Contains(out, "echo     1        read") ||
		!strings.Contains(out, `says it back\u001b[2J`) {
		t.Errorf("tools ls: want echo under a header, its description escaped:\n%s", out)
	}
	out, _ = agent.run(0, "tools", "ls", "-o", "json")
	listed := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var tool stewardv1.Tool
		if err := protojson.Unmarshal([]byte(line), &tool); err != nil {
			t.Fatalf("tools ls -o json: a line is not a Tool: %v\n%s", err, line)
		}
		listed++
	}
	if listed != len(registry) {
		t.Errorf("tools ls -o json printed %d tools, the server lists %d", listed, len(registry))
	}
	if out, _ := agent.run(0, "tools", "show", "shout"); !strings.Contains(out, "effect:       idempotent_write") || !strings.Contains(out, "endpoint:     builtin noop") {
		t.Errorf("tools show shout:\n%s", out)
	}

	if _, errs := agent.run(4, "tools", "register", file); !strings.Contains(errs, "permission_denied") || !strings.Contains(errs, "tool-admin") {
		t.Errorf("an agent registering: want permission_denied naming tool-admin, got %q", errs)
	}
	agent.run(4, "tools", "show", "nothing-such")
	noEffect := writeFile(t, dir, "no-effect.json", `{"name": "vague", "version": "1", "dataSensitivity": "DATA_SENSITIVITY_PUBLIC", "builtin": {"kind": "noop"}}`)
	if _, errs := admin.run(4, "tools", "register", noEffect); !strings.Contains(errs, "invalid_argument: contract.effect_class") {
		t.Errorf("a contract without its effect class: %q", errs)
	}
	if _, ok := registeredTools(t, h.url)["vague"]; ok {
		t.Error("a refused contract is registered")
	}
	typo := writeFile(t, dir, "typo.json", `{"name": "echo", "version": "3", "effectClas": "EFFECT_CLASS_READ"}`)
	if _, errs := admin.run(2, "tools", "register", typo); !strings.Contains(errs, `unknown field "effectClas"`) {
		t.Errorf("a contract with an unknown field: %q", errs)
	}
	admin.run(1, "tools", "register", filepath.Join(dir, "missing.json"))
}

// registeredTools is the server's registry as an agent reads it, by name.
func registeredTools(t *testing.T, url string) map[string]*stewardv1.Tool {
	t.Helper()
	c := stewardv1connect.NewToolServiceClient(&http.Client{Timeout: 30 * time.Second}, url, connect.WithInterceptors(stewardtest.Bearer(agentToken)))
	resp, err := c.ListTools(context.Background(), connect.NewRequest(&stewardv1.ListToolsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*stewardv1.Tool{}
	for _, tool := range resp.Msg.Tools {
		byName[tool.Contract.GetName()] = tool
	}
	return byName
}
