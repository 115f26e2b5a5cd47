package state_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestAJSONPageIsWeighedAsJSON: ten tasks of 256 criteria of 1 KiB of
// \x01 (which CreateTask takes) weigh about 256 KiB each in binary and six
// times that in JSON; a JSON ListTasks of them all is a page within the
// bound of an answer, with a token to continue, not resource_exhausted.
func TestAJSONPageIsWeighedAsJSON(t *testing.T) {
	env := stewardtest.NewEnv(t)
	for i := range 10 {
		k := contract(i)
		for j := range 256 {
			k.AcceptanceCriteria = append(k.AcceptanceCriteria, &stewardv1.AcceptanceCriterion{Id: fmt.Sprint("c", j), Description: strings.Repeat("\x01", 1<<10)})
		}
		env.Append(fmt.Sprint("t", i), &stewardv1.TaskCreated{Contract: k})
	}
	url := serveStateURL(t, env)
	// Uncompressed: Connect's send limit counts compressed bytes, and a
	// client need not take gzip.
	plain := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := plain.Post(url+"/steward.v1.QueryService/ListTasks", "application/json", strings.NewReader(`{"pageSize":1000}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	t.Logf("%d bytes, %d tasks", len(body), strings.Count(string(body), `"taskId"`))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"nextPageToken"`) {
		t.Fatalf("JSON ListTasks of ten tasks of 1.5 MB of JSON each: %d %.300s; want 200 and a page with a token", resp.StatusCode, body)
	}
}

// TestAPageTokenNamesItsList: a token this server did not issue for
// ListTasks — one of ListApprovals, one without a list, one past the end
// of the list — is invalid_argument on page_token, not an empty page.
func TestAPageTokenNamesItsList(t *testing.T) {
	env := stewardtest.NewEnv(t)
	for i := range 3 {
		env.Append(fmt.Sprint("t", i), &stewardv1.TaskCreated{Contract: contract(i)})
	}
	client := stewardv1connect.NewQueryServiceClient(http.DefaultClient, serveStateURL(t, env))
	for _, raw := range []string{"v1:approvals:1", "v1:2", "v1:tasks:99"} {
		tok := base64.RawURLEncoding.EncodeToString([]byte(raw))
		_, err := client.ListTasks(context.Background(), connect.NewRequest(&stewardv1.ListTasksRequest{PageToken: tok}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "page_token") {
			t.Errorf("ListTasks with the token of %q: %v; want invalid_argument on page_token", raw, err)
		}
	}
	tok := base64.RawURLEncoding.EncodeToString([]byte("v1:tasks:1"))
	if resp, err := client.ListTasks(context.Background(), connect.NewRequest(&stewardv1.ListTasksRequest{PageToken: tok})); err != nil || len(resp.Msg.Tasks) != 2 {
		t.Fatalf("ListTasks from position 1 of 3: %v %v; want the last two tasks", resp, err)
	}
}
