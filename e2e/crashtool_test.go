package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/steward-run/steward/pkg/stewardtest"
)

// startCrashTool starts the reference tool as the crash matrix uses it:
//
//	POST /work    answers at once
//	POST /slow    works, then holds its answer past the 1s timeout its
//	              contract gives the caller, so the caller sees no answer
//	POST /flaky   refuses a key's first request with 503, without working
//	POST /undo    the compensating tool
//	GET  /status  the status query for all of them
func startCrashTool(t *testing.T) *stewardtest.Tool {
	t.Helper()
	return stewardtest.StartTool(t).
		Always("/slow", stewardtest.Late).
		ScriptPerKey("/flaky", stewardtest.Fail(http.StatusServiceUnavailable))
}

// postsFor is how many requests carried key, past /flaky's refusal of a
// key's first request: a transient failure, retried with the same key.
func postsFor(tool *stewardtest.Tool, key string) int {
	n := tool.CallsFor(key)
	for _, r := range tool.Requests() {
		if r.Path == "/flaky" && r.Header.Get("Idempotency-Key") == key {
			return n - 1
		}
	}
	return n
}

// undone returns the actions the tool's compensations undid, in order.
func undone(tool *stewardtest.Tool) []string {
	var ids []string
	for _, w := range tool.Worked() {
		if w.Path != "/undo" {
			continue
		}
		var p struct {
			ActionID string `json:"action_id"`
		}
		_ = json.Unmarshal(w.Params, &p)
		ids = append(ids, p.ActionID)
	}
	return ids
}

// crashToolsFile is the tools file that points Steward at the crash tool
// served at url:
//   - put: an idempotent write with a status query;
//   - slowput: the same on /slow, with a 1s timeout that the tool outlasts;
//   - flakyput: the same on /flaky, which refuses a key's first request
//     with a 503 (postsFor counts only the requests after it);
//   - reserve: a reversible write that release undoes.
func crashToolsFile(url string) string {
	const item = `{\"type\":\"object\",\"required\":[\"item\"],\"properties\":{\"item\":{\"type\":\"string\",\"minLength\":1}}}`
	const undo = `{\"type\":\"object\",\"required\":[\"action_id\",\"op_key\"],\"properties\":{\"action_id\":{\"type\":\"string\"},\"op_key\":{\"type\":\"string\"}}}`
	entry := func(name, class, schema, timeout, path, extra string) string {
		return fmt.Sprintf(`{"name": %q, "version": "1.0.0", "effectClass": %q, "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "parametersSchema": "%s",
		  "idempotency": {"honoursKey": true, "keyScope": "action", "onRepeat": "return_first"},
		  "statusQuery": true, "timeout": %q, %s
		  "http": {"url": %q, "statusUrl": %q}}`, name, class, schema, timeout, extra, url+path, url+"/status")
	}
	return `{"tools": [` +
		entry("put", "EFFECT_CLASS_IDEMPOTENT_WRITE", item, "5s", "/work", "") + ",\n" +
		entry("slowput", "EFFECT_CLASS_IDEMPOTENT_WRITE", item, "1s", "/slow", "") + ",\n" +
		entry("flakyput", "EFFECT_CLASS_IDEMPOTENT_WRITE", item, "5s", "/flaky", `"retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "0.2s"},`) + ",\n" +
		entry("reserve", "EFFECT_CLASS_REVERSIBLE_WRITE", item, "5s", "/work", `"compensatingTool": "release",`) + ",\n" +
		entry("release", "EFFECT_CLASS_IDEMPOTENT_WRITE", undo, "5s", "/undo", "") +
		`]}`
}
