package natsusers_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/natsperm"
	"github.com/steward-run/steward/pkg/natsusers"
)

// TestRenderedUsersAreEnforced starts a real server from the config
// Write renders from the permission table and checks, as the governance
// plane's user, that the server stores the events it owns and refuses a
// foreign event type and a purge; and that a client naming no user is
// refused.
func TestRenderedUsersAreEnforced(t *testing.T) {
	dir := t.TempDir()
	if _, err := natsusers.Write(dir, natsperm.Planes(), natsperm.For); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(filepath.Join(dir, natsusers.ConfigDir, natsusers.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	opts.Port, opts.NoLog, opts.NoSigs = -1, true, true
	opts.JetStream, opts.StoreDir = true, t.TempDir()
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}

	if nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(0)); !errors.Is(err, nats.ErrAuthorization) {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("a client naming no user: %v, want an authorization violation", err)
	}

	const plane = "governance"
	refused := make(chan error, 8)
	seed, err := nats.NkeyOptionFromSeed(filepath.Join(dir, plane, natsusers.SeedFile))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.ClientURL(), seed, nats.CustomInboxPrefix(natsperm.Inbox(plane)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { refused <- err }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "STEWARD_EVENTS", Subjects: []string{"steward.task.>"}})
	if err != nil {
		t.Fatalf("governance may create a missing stream: %v", err)
	}
	if _, err := js.Publish(ctx, "steward.task.t1.action.permitted", []byte("permit")); err != nil {
		t.Fatalf("governance publishing a permit: %v", err)
	}

	wantRefused := func(what string) {
		t.Helper()
		select {
		case err := <-refused:
			if !errors.Is(err, nats.ErrPermissionViolation) {
				t.Errorf("%s: %v, want a permissions violation", what, err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s: the server did not refuse it", what)
		}
	}
	if err := nc.Publish("steward.task.t1.action.outcome", []byte("forged")); err != nil {
		t.Fatal(err)
	}
	wantRefused("governance publishing an outcome")
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelShort()
	if err := stream.Purge(short); err == nil {
		t.Error("governance purged the event stream")
	}
	wantRefused("governance purging the event stream")
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Errorf("the stream holds %d events, want the one permit alone", info.State.Msgs)
	}
}
