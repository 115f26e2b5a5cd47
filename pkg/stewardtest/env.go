package stewardtest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/embedded"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/natsperm"
	"github.com/steward-run/steward/pkg/stores"
	"github.com/steward-run/steward/pkg/task"
)

// Env is what a test of one plane, or of several, stands on: a bus of its
// own and the stores over it, opened by the same wiring as the binary's
// (stores.Open). Planes are the test's to start, over Env's stores.
type Env struct {
	*Bus
	*stores.Set
	// Logger writes to the test's log, shown when it fails.
	Logger *slog.Logger
	tb     testing.TB
	// users sign in to the bus; nil when it takes anyone (WithoutUsers)
	users    *embedded.Users
	usersDir string
}

// EnvOption changes how NewEnv builds an environment.
type EnvOption func(*envConfig)

type envConfig struct{ anyone bool }

// WithoutUsers makes the bus take anyone, with every permission, as an
// external NATS without users does: for a test that runs `steward serve`
// processes which name no NATS user.
func WithoutUsers() EnvOption { return func(c *envConfig) { c.anyone = true } }

// NewEnv starts a bus and opens the stores on it; both end with the test.
// The bus takes only Steward's NATS users, as steward dev's does (unless
// WithoutUsers): Bus is the admin's connection, and the log's appends,
// timers and the stores of As(plane) go through each plane's own user
// (pkg/natsperm), so that every plane test runs under the permissions. A
// write the server refuses a plane fails the test. Its planes are their
// consumers' sole readers, as steward dev's are (stores.Config.SoleConsumer).
func NewEnv(tb testing.TB, opts ...EnvOption) *Env {
	tb.Helper()
	var cfg envConfig
	for _, o := range opts {
		o(&cfg)
	}
	logger := Logger(tb)
	if cfg.anyone {
		bus := StartBus(tb)
		set, err := stores.Open(context.Background(), bus.JS, stores.Config{Logger: logger})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(set.Close)
		return &Env{Bus: bus, Set: set, Logger: logger, tb: tb}
	}
	dir := tb.TempDir()
	users, err := embedded.LoadOrCreateUsers(dir)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := embedded.Start(embedded.Config{StoreDir: tb.TempDir(), Port: -1, Users: users})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Shutdown)
	admin, err := users.Options(embedded.AdminUser)
	if err != nil {
		tb.Fatal(err)
	}
	bus := connectBus(tb, func(opts ...nats.Option) (*nats.Conn, error) { return s.Connect(append(admin, opts...)...) })
	bus.Server = s
	var mu sync.Mutex
	var refused []string
	writers := map[string]jetstream.JetStream{}
	for _, plane := range natsperm.Planes() {
		own, err := users.Options(plane)
		if err != nil {
			tb.Fatal(err)
		}
		own = append(own, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			mu.Lock()
			refused = append(refused, plane+": "+err.Error())
			mu.Unlock()
		}))
		writers[plane] = connectBus(tb, func(opts ...nats.Option) (*nats.Conn, error) { return s.Connect(append(own, opts...)...) }).JS
	}
	tb.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range refused {
			tb.Errorf("NATS refused a plane: %s", r)
		}
	})
	set, err := stores.Open(context.Background(), bus.JS, stores.Config{Logger: logger, Writers: writers, SoleConsumer: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(set.Close)
	return &Env{Bus: bus, Set: set, Logger: logger, tb: tb, users: users, usersDir: dir}
}

// SeedFile returns the nkey seed file of user (a plane, or
// embedded.AdminUser), for a process of its own to sign in with; "" when
// the bus takes anyone (WithoutUsers).
func (e *Env) SeedFile(user string) string {
	if e.users == nil {
		return ""
	}
	return embedded.SeedFile(e.usersDir, user)
}

// ConnectAs opens a connection to the bus as user — a plane, as a
// process of its own would (steward serve), or embedded.AdminUser. The
// caller closes it.
func (e *Env) ConnectAs(user string, opts ...nats.Option) (*nats.Conn, error) {
	if e.users == nil {
		return e.Server.Connect(opts...)
	}
	own, err := e.users.Options(user)
	if err != nil {
		return nil, err
	}
	return e.Server.Connect(append(own, opts...)...)
}

// Settle waits until the durable consumer named consumer has handled every
// event on the log that it takes (see Bus.Settle).
func (e *Env) Settle(consumers ...string) {
	e.tb.Helper()
	for _, c := range consumers {
		e.Bus.Settle(e.tb, e.Log.Config().Stream, c)
	}
}

// Logger returns a logger that writes to tb's log.
func Logger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{tb}, nil))
}

// testWriter sends a plane's log to the test's, shown when it fails.
type testWriter struct{ tb testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// WaitTask waits until task taskID, folded from the log, satisfies ok, and
// returns it as it was then.
func (e *Env) WaitTask(taskID string, ok func(*stewardv1.Task) bool) *stewardv1.Task {
	e.tb.Helper()
	var t *stewardv1.Task
	Eventually(e.tb, waitLimit, func() (bool, string) {
		var err error
		if t, _, err = e.Tasks.Load(context.Background(), taskID); err != nil {
			return false, err.Error()
		}
		return ok(t), fmt.Sprintf("task %s is %v", taskID, t.Status)
	})
	return t
}

// WaitAction waits until the action satisfies ok, and returns it as it
// was then.
func (e *Env) WaitAction(taskID, actionID string, ok func(*stewardv1.Action) bool) *stewardv1.Action {
	e.tb.Helper()
	var a *stewardv1.Action
	e.WaitTask(taskID, func(t *stewardv1.Task) bool {
		a = task.FindAction(t, actionID)
		return ok(a)
	})
	return a
}

// Count returns how many of the task's events have type typ.
func (e *Env) Count(taskID, typ string) int {
	e.tb.Helper()
	recs, err := e.Log.Read(context.Background(), taskID)
	if err != nil {
		e.tb.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Event.Type == typ {
			n++
		}
	}
	return n
}

// waitLimit bounds every wait of the kit: long enough for a loaded CI
// machine, short enough that a stuck test says so.
const waitLimit = 30 * time.Second
