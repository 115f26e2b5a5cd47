package notify

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// Notification is the body of what a sink receives, as JSON.
type Notification struct {
	// ID is the delivery's id, the same for every copy of it: the id of
	// the event it tells of (also the webhook-id header).
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	TaskID string `json:"task_id"`
	Tenant string `json:"tenant,omitempty"`
	// Sequence is the event's on the log; OccurredAt when it was recorded.
	Sequence   uint64    `json:"sequence"`
	OccurredAt time.Time `json:"occurred_at"`
	// Event is the event as recorded (protojson).
	Event json.RawMessage `json:"event"`
	// Approval, for an approval's notifications, is the approval as the
	// task now has it: tool, target, parameters (secrets as their
	// commitments), effect, policy reasons, the proposer's rationale, and
	// the action hash a decision binds to.
	Approval json.RawMessage `json:"approval,omitempty"`
	// Question, for a question's notifications, is the open question as
	// the task now has it: what it asks, its choices, whom it asks, and
	// the rungs it has climbed unanswered. Absent once it is closed.
	Question json.RawMessage `json:"question,omitempty"`
	// Act is what a person runs to act on it, when one is to.
	Act string `json:"act,omitempty"`
}

// deliverer sends one sink's notifications.
type deliverer struct {
	n    *Notifier
	sink *Sink
	// kinds are the kinds the sink takes, by event type.
	kinds map[string][]kind
}

// handle sends the notification an event makes, if the sink takes it:
// nil once the sink answered 2xx (or takes none), an error to have the
// event delivered again, with backoff, otherwise.
func (d *deliverer) handle(ctx context.Context, rec *stewardv1.EventRecord) error {
	// The ack wait runs from the delivery, and this event may have queued
	// in its lane behind a slow sink's: ask for it afresh before the POST.
	eventlog.InProgress(ctx)
	ev := rec.Event
	k, ok := kindOf(d.kinds, ev)
	if !ok || (len(d.sink.Tasks) > 0 && !slices.Contains(d.sink.Tasks, ev.TaskId)) {
		return nil
	}
	note := &Notification{ID: ev.EventId, Kind: k.name, TaskID: ev.TaskId, Sequence: rec.Sequence, OccurredAt: ev.GetTime().AsTime()}
	var tier stewardv1.RiskTier
	var ap *stewardv1.Approval
	var q *stewardv1.InputRequest
	var err error
	if scheduleEvent(ev) {
		note.Tenant, err = d.scheduleTenant(ctx, ev.TaskId)
	} else {
		err = d.n.cfg.Tasks.Peek(ctx, ev.TaskId, rec.Sequence, func(t *stewardv1.Task) {
			note.Tenant, tier = t.Tenant, t.GetContract().GetRiskTier()
			if a := task.FindAction(t, approvalAction(ev)); a != nil && a.Approval != nil {
				ap = proto.CloneOf(a.Approval)
			}
			if t.OpenInput != nil && strings.HasPrefix(k.name, "question.") {
				q = proto.CloneOf(t.OpenInput)
			}
		})
	}
	if eventlog.Permanent(err) {
		// A task the fold cannot read (broken) tells no one; its
		// projection has set the bad event aside and says so.
		d.n.cfg.Logger.Error("notify: task unreadable; nothing sent", "sink", d.sink.Name, "task", ev.TaskId, "seq", rec.Sequence, "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	if (d.sink.Tenant != "" && d.sink.Tenant != note.Tenant) || (len(d.sink.tiers) > 0 && !slices.Contains(d.sink.tiers, tier)) {
		return nil
	}
	if note.Event, err = protojson.Marshal(ev); err != nil {
		return errs.Wrap(errs.Internal, err, "notify: encode event %s", ev.EventId)
	}
	if ap != nil {
		if note.Approval, err = protojson.Marshal(ap); err != nil {
			return errs.Wrap(errs.Internal, err, "notify: encode approval")
		}
	}
	if q != nil {
		if note.Question, err = protojson.Marshal(q); err != nil {
			return errs.Wrap(errs.Internal, err, "notify: encode question")
		}
	}
	if k.act != nil {
		note.Act = k.act(ev)
	}
	body, err := json.Marshal(note)
	if err != nil {
		return errs.Wrap(errs.Internal, err, "notify: encode notification %s", ev.EventId)
	}
	return d.send(ctx, note.ID, body)
}

// approvalAction is the action an approval's event is about, or "".
func approvalAction(ev *stewardv1.Event) string {
	return cmp.Or(ev.GetApprovalRequested().GetApproval().GetActionId(), ev.GetApprovalReminded().GetActionId(), ev.GetApprovalEscalated().GetActionId())
}

// send POSTs body to the sink, signed, and counts how it went.
func (d *deliverer) send(ctx context.Context, id string, body []byte) error {
	ts := d.n.cfg.Now()
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.sink.URL, bytes.NewReader(body))
	if err != nil {
		return errs.Wrap(errs.Internal, err, "notify: sink %s", d.sink.Name)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Steward-Notify/1")
	req.Header.Set(HeaderID, id)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(HeaderSignature, Sign(d.sink.keys, id, ts, body))
	resp, err := d.n.cfg.Client.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			err = fmt.Errorf("answered %s", resp.Status)
		}
	}
	if err != nil {
		d.n.sent.WithLabelValues(d.sink.Name, "failed").Inc()
		return errs.Wrap(errs.Unavailable, err, "notify: sink %s, notification %s", d.sink.Name, id)
	}
	d.n.sent.WithLabelValues(d.sink.Name, "delivered").Inc()
	return nil
}
