// Package notify tells people when they are needed: it POSTs a signed
// notification to each webhook sink of a sinks file for the events the
// sink takes (an approval requested, a question asked, a budget alert, a
// task stalled, …; kinds.go), with what a person needs to act.
//
// Each sink has a durable consumer of its own on the log
// (eventlog.ReactToNew, named notify-<sink>): a notification is sent at
// least once — acknowledged only once its sink answered 2xx — under the
// id of its event, so every copy of one carries the same webhook-id; a
// sink that fails is retried with backoff on its own consumer, and slows
// no other sink and no action. The state plane runs it; its replicas
// share each sink's consumer, so one of them sends each notification.
// The sinks file is read again when it changes. See docs/notifications.md.
package notify

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/taskstore"
)

// Timeout bounds one POST to a sink: under the consumer's ack wait
// (eventlog.ReactionAckWait), so that a slow sink's notification is not
// handed out again while its POST is still out.
const Timeout = 4 * time.Second

// DefaultReload is how often the sinks file is looked at for a change.
const DefaultReload = 2 * time.Second

// Config configures a Notifier.
type Config struct {
	Log   *eventlog.Log
	Tasks *taskstore.Store
	// File is the sinks file (File).
	File string
	// Reload is how often File is looked at; DefaultReload when zero.
	Reload time.Duration
	// Client sends the notifications; one with Timeout and no redirects
	// when nil.
	Client *http.Client
	Now    func() time.Time
	Logger *slog.Logger
}

// Notifier runs the sinks of a sinks file.
type Notifier struct {
	cfg  Config
	sent *prometheus.CounterVec

	mu      sync.Mutex
	running map[string]*running
	stamp   fileStamp
	// failed says a sink of the file last read did not start.
	failed bool
}

// running is a sink and its consumer.
type running struct {
	sink *Sink
	sub  eventlog.Subscription
}

// New reads cfg.File, refusing one that does not parse: a sinks file
// that is wrong at start is the operator's to fix, not to run without.
func New(cfg Config) (*Notifier, error) {
	if cfg.Reload <= 0 {
		cfg.Reload = DefaultReload
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	n := &Notifier{cfg: cfg, running: map[string]*running{},
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "steward_notifications_total",
			Help: "Notifications POSTed to each sink, by outcome: delivered (2xx), failed (to be sent again).",
		}, []string{"sink", "outcome"})}
	if _, err := Load(cfg.File); err != nil {
		return nil, err
	}
	return n, nil
}

// Collector returns the notifications' metrics.
func (n *Notifier) Collector() prometheus.Collector { return n.sent }

// Run runs the sinks until ctx ends, reading the file again when it
// changes; a file that no longer parses is logged and the sinks run on as
// they were.
func (n *Notifier) Run(ctx context.Context) {
	defer n.stopAll()
	tick := time.NewTicker(n.cfg.Reload)
	defer tick.Stop()
	for {
		n.reload(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// fileStamp tells a changed file from the one last read.
type fileStamp struct {
	mod  time.Time
	size int64
}

// reload reads the file if it changed and runs what it says.
func (n *Notifier) reload(ctx context.Context) {
	fi, err := os.Stat(n.cfg.File)
	if err != nil {
		n.cfg.Logger.Error("notify: sinks file", "file", n.cfg.File, "err", err)
		return
	}
	stamp := fileStamp{fi.ModTime(), fi.Size()}
	if stamp == n.stamp && !n.failed {
		return
	}
	f, err := Load(n.cfg.File)
	if err != nil {
		n.cfg.Logger.Error("notify: sinks file not reloaded; the sinks run as they were", "file", n.cfg.File, "err", err)
		n.stamp = stamp
		return
	}
	n.stamp = stamp
	n.apply(ctx, f)
}

// apply starts the sinks f names anew or changed, and stops the rest. A
// sink that could not start (NATS away, a leader election) is left as it
// was — a changed one runs on as before — and tried again at the next
// look (failed).
func (n *Notifier) apply(ctx context.Context, f *File) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.failed = false
	want := map[string]bool{}
	for i := range f.Sinks {
		want[f.Sinks[i].Name] = true
	}
	// The removed first: once the file's new sinks run, the old are told
	// nothing more.
	for name, r := range n.running {
		if !want[name] {
			r.sub.Stop()
			delete(n.running, name)
			n.cfg.Logger.Info("notify: sink stopped", "sink", name)
		}
	}
	for i := range f.Sinks {
		s := &f.Sinks[i]
		old := n.running[s.Name]
		if old != nil && old.sink.same(s) {
			continue
		}
		sub, err := n.start(ctx, s)
		if err != nil {
			n.failed = true
			n.cfg.Logger.Error("notify: sink not started; trying again", "sink", s.Name, "err", err)
			continue
		}
		if old != nil {
			old.sub.Stop()
		}
		n.running[s.Name] = &running{sink: s, sub: sub}
		n.cfg.Logger.Info("notify: sink running", "sink", s.Name, "kinds", s.Kinds)
	}
}

// start runs s's consumer, over every notification's events (types), for
// the kinds s takes.
func (n *Notifier) start(ctx context.Context, s *Sink) (eventlog.Subscription, error) {
	var takes []kind
	for _, k := range kinds {
		if s.takes(k.name) {
			takes = append(takes, k)
		}
	}
	d := &deliverer{n: n, sink: s, kinds: byType(takes)}
	var rs []eventlog.Reaction
	for _, on := range types() {
		rs = append(rs, on(d.handle))
	}
	return n.cfg.Log.ReactToNew(ctx, Consumer(s.Name), rs...)
}

// Consumer is the name of a sink's durable consumer.
func Consumer(sink string) string { return "notify-" + sink }

func (n *Notifier) stopAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for name, r := range n.running {
		r.sub.Stop()
		delete(n.running, name)
	}
}
