package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/nats-io/nats.go"

	"github.com/steward-run/steward/cmd/steward/app"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestClusterCLIWithTokens runs every CLI command that calls a plane
// against the planes as services (`steward serve --auth tokens.json`) on
// the three-node cluster: each succeeds with --token, and with the token
// in $STEWARD_TOKEN; without one, each fails naming --token — except
// `audit key`, whose key is public and needs none. The commands run in a
// directory without a dev token file, so nothing is sent unasked.
func TestClusterCLIWithTokens(t *testing.T) {
	b := startClusterBase(t)
	b.withTokens(t, t.TempDir())
	urls := map[string]string{}
	for _, p := range clusterServices {
		if p.plane != "execution" {
			urls[p.plane] = strings.TrimPrefix(b.startPlane(t, p.plane, p.node, urls["governance"], nil).url, "http://")
		}
	}
	admin := withToken("http://"+urls["control"], b.token)
	resp, err := admin.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "cli-1", Contract: contract()}))
	if err != nil {
		t.Fatal(err)
	}
	taskID := resp.Msg.Task.Contract.TaskId
	waitStarted(t, withToken("http://"+urls["state"], b.token).clients, taskID)
	seq := deadLetter(t, b, urls["state"])

	dir := t.TempDir()
	state, governance := []string{"--addr", urls["state"]}, []string{"--addr", urls["governance"]}
	commands := []struct {
		name string
		args []string
		// open: the server answers without a token.
		open bool
	}{
		{"audit replay", append([]string{"audit", "replay", "--task", taskID}, state...), false},
		{"audit verify", append([]string{"audit", "verify", "--task", taskID}, state...), false},
		{"audit export", append([]string{"audit", "export", "--task", taskID, "--out", filepath.Join(dir, "events")}, state...), false},
		{"audit finding", append([]string{"audit", "finding", "--task", taskID, "--description", "checked", "--request-id", "cli-finding"}, state...), false},
		{"audit key", append([]string{"audit", "key", "--out", filepath.Join(dir, "key.pem")}, governance...), true},
		{"receipt", append([]string{"receipt", "--task", taskID}, state...), false},
		{"dead-letters list", append([]string{"dead-letters", "list"}, state...), false},
		{"dead-letters replay", append([]string{"dead-letters", "replay", "--seq", seq, "--consumer", "control"}, state...), false},
	}
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			if out, code := runIn(dir, nil, append(c.args, "--token", b.token)...); code != 0 {
				t.Errorf("with --token: exit %d:\n%s", code, out)
			}
			if out, code := runIn(dir, []string{app.TokenEnv + "=" + b.token}, c.args...); code != 0 {
				t.Errorf("with $%s: exit %d:\n%s", app.TokenEnv, code, out)
			}
			out, code := runIn(dir, nil, c.args...)
			switch {
			case c.open && code != 0:
				t.Errorf("without a token: exit %d, want 0 (the key is public):\n%s", code, out)
			case !c.open && (code == 0 || !strings.Contains(out, "unauthenticated") || !strings.Contains(out, "--token")):
				t.Errorf("without a token: exit %d, want a failure that says unauthenticated and names --token:\n%s", code, out)
			}
		})
	}
}

// deadLetter puts an event no plane can decode on the log, as the
// cluster's admin, and returns its sequence once the state plane at addr
// lists control's record of it.
func deadLetter(t *testing.T, b *clusterBase, addr string) string {
	t.Helper()
	ctx := context.Background()
	ack, err := b.cluster.Bus(0).JS.PublishMsg(ctx, &nats.Msg{Subject: "steward.task.cli-dl.task.created", Data: []byte("not an event")})
	if err != nil {
		t.Fatal(err)
	}
	dl := stewardv1connect.NewDeadLetterServiceClient(http.DefaultClient, "http://"+addr, connect.WithInterceptors(stewardtest.Bearer(b.token)))
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		resp, err := dl.ListDeadLetters(ctx, connect.NewRequest(&stewardv1.ListDeadLettersRequest{}))
		if err != nil {
			return false, err.Error()
		}
		for _, d := range resp.Msg.DeadLetters {
			if d.Sequence == ack.Sequence && d.Consumer == "control" {
				return true, ""
			}
		}
		return false, "control has not set the event aside"
	})
	return strconv.FormatUint(ack.Sequence, 10)
}

// runIn runs the binary in dir with args, $STEWARD_TOKEN unset unless env
// sets it, and returns what it printed and its exit code.
func runIn(dir string, env []string, args ...string) (string, int) {
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, app.TokenEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), exit.ExitCode()
	}
	if err != nil {
		return err.Error(), -1
	}
	return out.String(), 0
}
