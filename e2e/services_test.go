package e2e_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/cmd/steward/app"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// startServices runs each plane as its own `steward serve`, in this
// process, against one new NATS JetStream server, with the flags every
// plane needs and then its own from extra, and returns each plane's URL.
func startServices(t testing.TB, extra map[string][]string) map[string]string {
	t.Helper()
	return startServicesOn(t, stewardtest.StartBus(t), extra)
}

// startServicesOn is startServices against bus.
func startServicesOn(t testing.TB, bus *stewardtest.Bus, extra map[string][]string) map[string]string {
	t.Helper()
	urls := map[string]string{}
	for _, plane := range []string{"control", "governance", "execution", "state"} {
		m := app.NewServer(io.Discard, &testWriter{tb: t})
		flags := []string{"--plane", plane, "--nats", bus.Server.ClientURL(), "--addr", "127.0.0.1:0", "--log-level", "warn", "--sandbox", t.TempDir(), "--insecure"}
		if plane == "governance" {
			flags = append(flags, "--credential-key", filepath.Join(t.TempDir(), "credential.key"))
		}
		if err := m.ParseFlags("serve", append(flags, extra[plane]...)); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(context.Background()); err != nil {
			t.Fatalf("%s: %v", plane, err)
		}
		t.Cleanup(m.Close)
		urls[plane] = m.URL()
	}
	return urls
}

// TestServicesMode runs each plane as its own `steward serve` against one
// external NATS JetStream server, as docker-compose and Kubernetes do, and
// checks that a task created through the control plane is served by the
// state plane, and an artifact the control plane stored is read back
// through the state plane.
func TestServicesMode(t *testing.T) {
	urls := startServices(t, nil)
	control, state := newClients(urls["control"]), newClients(urls["state"])
	taskID := createTask(t, control, "services-1").Contract.TaskId
	got := waitStatus(t, state, taskID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	if got.RequestId != "services-1" {
		t.Fatalf("state plane serves %v", got)
	}
	// The state plane reads what the control plane stored: an artifact
	// submitted inline comes back from its own process.
	content := []byte("# Services mode\nOne store, four processes.\n")
	if _, err := control.tasks.SubmitArtifact(context.Background(), connect.NewRequest(&stewardv1.SubmitArtifactRequest{
		TaskId: taskID, RequestId: "services-report", Name: "report", MediaType: "text/markdown", Content: content,
	})); err != nil {
		t.Fatal(err)
	}
	stream, err := state.query.GetArtifactContent(context.Background(), connect.NewRequest(&stewardv1.GetArtifactContentRequest{TaskId: taskID, Name: "report"}))
	if err != nil {
		t.Fatal(err)
	}
	var read []byte
	for stream.Receive() {
		read = append(read, stream.Msg().Chunk...)
	}
	if err := stream.Err(); err != nil || string(read) != string(content) {
		t.Fatalf("the state plane read back %q (%v), want %q", read, err, content)
	}
	stream.Close()
	// Each plane serves only its own services.
	_, err = state.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{Contract: contract()}))
	if connect.CodeOf(err) != connect.CodeUnimplemented && connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("the state plane accepted a control-plane call: %v", err)
	}
}

func TestServeFlagsAreChecked(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--nats", "nats://x:4222"}, "--plane is required"},
		{[]string{"serve", "--plane", "billing", "--nats", "nats://x:4222"}, `--plane: "billing"`},
		{[]string{"serve", "--plane", "state"}, "--nats is required"},
		{[]string{"serve", "--plane", "governance", "--nats", "nats://x:4222"}, "--credential-key is required"},
		{[]string{"serve", "--plane", "state", "--nats", "nats://x:4222", "--nats-nkey", "a.nk", "--nats-creds", "a.creds"}, "--nats-nkey and --nats-creds"},
		{[]string{"serve", "--plane", "state", "--nats", "nats://x:4222", "--nats-cert", "client.pem"}, "--nats-cert and --nats-key"},
		{[]string{"serve", "--plane", "state", "--nats", "nats://x:4222", "--nats-key", "client-key.pem"}, "--nats-cert and --nats-key"},
		{[]string{"serve", "--plane", "state", "--nats", "nats://x:4222", "--insecure", "--nats-nkey", "/no/such/seed.nk"}, "--nats-nkey"},
		{[]string{"serve", "--plane", "state", "--nats", "nats://x:4222", "--insecure", "--nats-creds", "/no/such/user.creds"}, "--nats-creds"},
		{[]string{"serve", "--plane", "state", "--nats", "nats://x:4222", "--insecure", "--nats-ca", "/no/such/ca.pem"}, "--nats-ca"},
		{[]string{"serve", "--plane", "state", "--nats", "nats://x:4222", "--insecure", "--nats-cert", "/no/such/c.pem", "--nats-key", "/no/such/k.pem"}, "--nats-cert"},
		{[]string{"serve", "--plane", "control", "--nats", "nats://x:4222", "--insecure", "--secret-key", "/no/such/secret.key"}, "serve never creates it"},
		{[]string{"serve", "--plane", "execution", "--nats", "nats://x:4222", "--insecure", "--secret-key", "/no/such/secret.key"}, "steward secret-key --out=/no/such/secret.key"},
		{[]string{"nats-users"}, "--out is required"},
		{[]string{"secret-key"}, "--out is required"},
		{[]string{"dev", "--credential-ttl", "-1h"}, "--credential-ttl"},
		{[]string{"dev", "--credential-ttl", "1ns"}, "--credential-ttl"},
		{[]string{"dev", "--credential-ttl", "87600h"}, "--credential-ttl"},
		{[]string{"dev", "--addr", "nonsense"}, "--addr"},
		{[]string{"dev", "--log-level", "loud"}, "--log-level"},
	} {
		out := run(t, 1, tt.args...)
		if !strings.Contains(out, tt.want) {
			t.Errorf("steward %v said %q; want it to mention %q", tt.args, out, tt.want)
		}
	}
	// Files that are there but are not what the flag takes.
	dir := t.TempDir()
	junk := writeFile(t, dir, "junk", "not a key\n")
	for flag, want := range map[string]string{"--nats-nkey": "nkey user seed", "--nats-creds": "no user seed", "--nats-ca": "no PEM certificate"} {
		out := run(t, 1, "serve", "--plane", "state", "--nats", "nats://x:4222", "--insecure", flag, junk)
		if !strings.Contains(out, flag) || !strings.Contains(out, want) {
			t.Errorf("serve %s with a file of junk said %q; want it to name %s and say %q", flag, out, flag, want)
		}
	}
	if out := run(t, 1, "serve", "--plane", "control", "--nats", "nats://x:4222", "--insecure", "--secret-key", junk); !strings.Contains(out, "--secret-key") || !strings.Contains(out, "64 hex digits") {
		t.Errorf("serve --secret-key with a file of junk said %q; want it to name --secret-key and ask for 64 hex digits", out)
	}
}
