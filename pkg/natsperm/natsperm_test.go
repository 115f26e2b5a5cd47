package natsperm_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/embedded"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/natsperm"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/stores"
)

// server is an embedded server that takes only Steward's users.
type server struct {
	*embedded.Server
	users *embedded.Users
}

func startServer(t *testing.T) server {
	t.Helper()
	users, err := embedded.LoadOrCreateUsers(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := embedded.Start(embedded.Config{StoreDir: t.TempDir(), Port: -1, Users: users})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return server{Server: s, users: users}
}

// conn is one user's connection and the permission violations the server
// reported to it.
type conn struct {
	nc *nats.Conn
	js jetstream.JetStream

	mu      sync.Mutex
	refused []string
}

func (s server) connect(t *testing.T, user string) *conn {
	t.Helper()
	opts, err := s.users.Options(user)
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{}
	opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			c.mu.Lock()
			c.refused = append(c.refused, err.Error())
			c.mu.Unlock()
		}
	}))
	if c.nc, err = s.Connect(opts...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.nc.Close)
	if c.js, err = jetstream.New(c.nc); err != nil {
		t.Fatal(err)
	}
	return c
}

// refusedWithin is how long a violation may take to come back: it is an
// asynchronous error, and on a loaded machine (CI once saw 5 s pass, at a
// load average of 9 on 2 cores) it comes late.
const refusedWithin = 20 * time.Second

// wasRefused reports whether the server refused subject to c, by the
// violation it sent back.
func (c *conn) wasRefused(subject string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.refused {
		if strings.Contains(r, `"`+subject+`"`) {
			return true
		}
	}
	return false
}

// openStores opens the log and stores as the admin, as steward dev does.
func openStores(t *testing.T, s server) (*stores.Set, *conn) {
	t.Helper()
	admin := s.connect(t, embedded.AdminUser)
	st, err := stores.Open(context.Background(), admin.js, stores.Config{Logger: stewardtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st, admin
}

// TestEachTypeHasOnePublisher publishes every event type as every plane,
// each plane on its own task, and checks with the admin that the stream
// holds exactly the owner's: the server, not the fold, refused the rest.
func TestEachTypeHasOnePublisher(t *testing.T) {
	s := startServer(t)
	openStores(t, s)
	admin := s.connect(t, embedded.AdminUser)
	ctx := context.Background()
	stream, err := admin.js.Stream(ctx, eventlog.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	subject := func(plane, typ string) string { return eventlog.ChainPrefix(typ) + "." + plane + "." + typ }
	conns := map[string]*conn{}
	for _, plane := range natsperm.Planes() {
		c := s.connect(t, plane)
		conns[plane] = c
		for _, typ := range event.Types() {
			if err := c.nc.Publish(subject(plane, typ), []byte("forged")); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	for _, typ := range event.Types() {
		owner := event.Owner(typ)
		if owner == "" {
			t.Errorf("%s has no owner", typ)
		}
		publishers := 0
		for _, plane := range natsperm.Planes() {
			stored := func() bool {
				_, err := stream.GetLastMsgForSubject(ctx, subject(plane, typ))
				return err == nil
			}
			if plane == owner {
				// A core publish is stored after its flush returns.
				stewardtest.Eventually(t, 5*time.Second, func() (bool, string) { return stored(), typ + " as its owner " + plane + " not stored" })
				publishers++
				continue
			}
			c := conns[plane]
			stewardtest.Eventually(t, 5*time.Second, func() (bool, string) {
				return c.wasRefused(subject(plane, typ)), "no permissions violation for " + subject(plane, typ) + " as " + plane
			})
			if stored() {
				publishers++
				t.Errorf("%s as %s: stored, want refused", typ, plane)
			}
		}
		if publishers != 1 {
			t.Errorf("%s: %d planes may publish it, want 1", typ, publishers)
		}
	}
}

// TestRefusals: what no plane may do — erase history, unhook a consumer,
// write a bucket or read an inbox it does not own, connect without a user.
func TestRefusals(t *testing.T) {
	s := startServer(t)
	st, admin := openStores(t, s)
	ctx := context.Background()
	stewardtest.Append(t, st.Log, "t1", &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}})
	if _, err := admin.js.CreateOrUpdateConsumer(ctx, eventlog.DefaultStream, jetstream.ConsumerConfig{Durable: "execution", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	kvOwners := map[string][]string{
		"STEWARD_REQUESTS":               {event.PlaneControl},
		"STEWARD_RESULTS":                {event.PlaneControl, event.PlaneExecution},
		"STEWARD_TOOL_KV":                {event.PlaneExecution},
		"STEWARD_REQUEST_IDS":            {event.PlaneControl, event.PlaneGovernance, event.PlaneState},
		"STEWARD_SOMEONE_ELSES":          nil,
		eventlog.DefaultStream:           nil,
		eventlog.DefaultDeadLetterStream: nil,
	}
	t.Run("planes", func(t *testing.T) {
		for _, plane := range natsperm.Planes() {
			t.Run(plane, func(t *testing.T) {
				t.Parallel()
				c := s.connect(t, plane)
				for _, api := range []string{
					"$JS.API.STREAM.PURGE." + eventlog.DefaultStream,
					"$JS.API.STREAM.DELETE." + eventlog.DefaultStream,
					"$JS.API.STREAM.MSG.DELETE." + eventlog.DefaultStream,
					"$JS.API.STREAM.UPDATE." + eventlog.DefaultStream,
					"$JS.API.CONSUMER.DELETE." + eventlog.DefaultStream + ".execution",
				} {
					rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
					_, err := c.nc.RequestWithContext(rctx, api, []byte("{}"))
					cancel()
					if err == nil {
						t.Errorf("%s answered", api)
					}
					stewardtest.Eventually(t, refusedWithin, func() (bool, string) { return c.wasRefused(api), api + " not refused" })
				}
				for bucket, owners := range kvOwners {
					subj := "$KV." + bucket + ".k-" + plane
					if err := c.nc.Publish(subj, []byte("forged")); err != nil {
						t.Fatal(err)
					}
					if err := c.nc.Flush(); err != nil {
						t.Fatal(err)
					}
					owned := false
					for _, o := range owners {
						owned = owned || o == plane
					}
					if !owned {
						stewardtest.Eventually(t, refusedWithin, func() (bool, string) { return c.wasRefused(subj), subj + " not refused" })
					}
				}
				for _, other := range natsperm.Planes() {
					if other == plane {
						continue
					}
					inbox := natsperm.Inbox(other) + ".>"
					if _, err := c.nc.SubscribeSync(inbox); err != nil {
						t.Fatal(err)
					}
					_ = c.nc.Flush()
					stewardtest.Eventually(t, refusedWithin, func() (bool, string) { return c.wasRefused(inbox), "subscribed to " + inbox })
				}
			})
		}
	})
	// Nothing was erased, the consumer is still there.
	info, err := admin.js.Stream(ctx, eventlog.DefaultStream)
	if err != nil || info.CachedInfo().State.Msgs == 0 {
		t.Fatalf("stream after refusals: %v, %+v", err, info)
	}
	if _, err := admin.js.Consumer(ctx, eventlog.DefaultStream, "execution"); err != nil {
		t.Fatalf("consumer after refusals: %v", err)
	}
	nc, err := nats.Connect(s.ClientURL())
	if err == nil {
		nc.Close()
		t.Fatal("a connection without a user was accepted")
	}
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("a connection without a user: %v, want an authorization violation", err)
	}
}

// owns is an event of a type each plane owns.
var owns = map[string]event.Payload{
	event.PlaneControl:    &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}},
	event.PlaneGovernance: &stewardv1.CredentialRevoked{},
	event.PlaneExecution:  &stewardv1.ActionHeartbeat{},
	event.PlaneState:      &stewardv1.TaskStalled{},
}

// TestPlanesWork runs what a plane does on its own connection — open the
// stores (creating them), append an event it owns, read it back, follow
// the log — so that the table grants all the code needs.
func TestPlanesWork(t *testing.T) {
	for _, plane := range natsperm.Planes() {
		t.Run(plane, func(t *testing.T) {
			s := startServer(t)
			c := s.connect(t, plane)
			ctx := context.Background()
			st, err := stores.Open(ctx, c.js, stores.Config{Logger: stewardtest.Logger(t), Plane: plane})
			if err != nil {
				t.Fatal(err, c.refused)
			}
			t.Cleanup(st.Close)
			if plane != event.PlaneExecution {
				if _, _, err := st.Log.FirstUse(ctx, "k-"+plane, []byte("v")); err != nil {
					t.Fatalf("first use: %v", err)
				}
			}
			ev := stewardtest.Event(t, "t-"+plane, owns[plane])
			if _, err := st.Log.Append(ctx, eventlog.Head{}, ev); err != nil {
				t.Fatalf("append %s: %v", ev.Type, err)
			}
			recs, err := st.Log.Read(ctx, "t-"+plane)
			if err != nil || len(recs) != 1 {
				t.Fatalf("read back: %v, %d records", err, len(recs))
			}
			fctx, cancel := context.WithCancel(ctx)
			err = st.Log.Follow(fctx, "t-"+plane, 0, func(*stewardv1.EventRecord) error { cancel(); return nil }, nil)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("follow: %v", err)
			}
			if len(c.refused) > 0 {
				t.Fatalf("refused: %v", c.refused)
			}
		})
	}
}

// TestLagMetricsWork: every process, whichever plane, reports the lag of
// the durable consumers on the event and timer streams.
func TestLagMetricsWork(t *testing.T) {
	s := startServer(t)
	openStores(t, s)
	for _, plane := range natsperm.Planes() {
		c := s.connect(t, plane)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := eventlog.ConsumerLags(ctx, c.js, append([]string{eventlog.DefaultStream}, natsperm.TimerStreams()...)...)
		cancel()
		if err != nil {
			t.Errorf("%s: %v (%v)", plane, err, c.refused)
		}
	}
}

// TestStreamsNamesEveryStreamAPlaneCreates: every stream a plane may
// create is in Streams, so that `steward nats-streams` raises it.
func TestStreamsNamesEveryStreamAPlaneCreates(t *testing.T) {
	all := natsperm.Streams()
	for _, plane := range natsperm.Planes() {
		for _, g := range natsperm.Grants(plane) {
			for _, s := range g.Subjects {
				if name, ok := strings.CutPrefix(s, "$JS.API.STREAM.CREATE."); ok && !slices.Contains(all, name) {
					t.Errorf("%s may create stream %s, which Streams does not name", plane, name)
				}
			}
		}
	}
}
