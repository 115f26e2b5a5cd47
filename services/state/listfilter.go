package state

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Bounds of ListTasks's filters.
const (
	// MaxScan bounds the tasks one ListTasks call examines: a filter that
	// matches nothing among a million tasks answers an empty page and a
	// token after MaxScan of them, never a scan of the million.
	MaxScan = 10_000
	// MaxFilterText bounds the text filter, in characters: the match is a
	// pass over each task's intent, outcome and id per character of it.
	MaxFilterText = 200
	// MaxFilterRef bounds the owner and tool filters, in bytes.
	MaxFilterRef = 256
)

// TaskFilter is what a task must match to be listed (ListTasksRequest's
// filters); the zero filter matches every task.
type TaskFilter struct {
	Statuses                    []stewardv1.TaskStatus
	Owner                       string
	RiskTiers                   []stewardv1.RiskTier
	Tool                        string
	Text                        string
	CreatedAfter, CreatedBefore time.Time
	// Parent is a task id: only the sub-tasks delegated from it.
	Parent string
	// Objective is an objective id: only the tasks that work towards it.
	Objective string
}

// taskFilter checks a request's filters, naming the field refused.
func taskFilter(req *stewardv1.ListTasksRequest) (TaskFilter, error) {
	f := TaskFilter{Statuses: req.Statuses, Owner: req.Owner, RiskTiers: req.RiskTiers, Tool: req.Tool, Text: req.Text, Parent: req.ParentTaskId, Objective: req.ObjectiveId}
	for i, st := range req.Statuses {
		if _, ok := stewardv1.TaskStatus_name[int32(st)]; !ok || st == stewardv1.TaskStatus_TASK_STATUS_UNSPECIFIED {
			return f, errs.Field(fmt.Sprintf("statuses[%d]", i), "%d is not a task status", st)
		}
	}
	for i, r := range req.RiskTiers {
		if _, ok := stewardv1.RiskTier_name[int32(r)]; !ok || r == stewardv1.RiskTier_RISK_TIER_UNSPECIFIED {
			return f, errs.Field(fmt.Sprintf("risk_tiers[%d]", i), "%d is not a risk tier", r)
		}
	}
	switch {
	case len(req.Owner) > MaxFilterRef:
		return f, errs.Field("owner", "is %d bytes, past the limit of %d", len(req.Owner), MaxFilterRef)
	case len(req.Tool) > MaxFilterRef:
		return f, errs.Field("tool", "is %d bytes, past the limit of %d", len(req.Tool), MaxFilterRef)
	case strings.Contains(req.Tool, "@"):
		return f, errs.Field("tool", "%s is not a bare tool name: leave out @version", errs.Quote(req.Tool))
	case utf8.RuneCountInString(req.Text) > MaxFilterText:
		return f, errs.Field("text", "is %d characters, past the limit of %d", utf8.RuneCountInString(req.Text), MaxFilterText)
	case req.ParentTaskId != "" && !eventlog.ValidTaskID(req.ParentTaskId):
		return f, errs.Field("parent_task_id", "%s is not a task id: "+eventlog.TaskIDRule, errs.Quote(req.ParentTaskId))
	case req.ObjectiveId != "" && !eventlog.ValidTaskID(req.ObjectiveId):
		return f, errs.Field("objective_id", "%s is not an objective id: "+eventlog.TaskIDRule, errs.Quote(req.ObjectiveId))
	}
	var err error
	if f.CreatedAfter, err = filterTime("created_after", req.CreatedAfter); err != nil {
		return f, err
	}
	if f.CreatedBefore, err = filterTime("created_before", req.CreatedBefore); err != nil {
		return f, err
	}
	if !f.CreatedAfter.IsZero() && !f.CreatedBefore.IsZero() && !f.CreatedAfter.Before(f.CreatedBefore) {
		return f, errs.Field("created_before", "must be after created_after")
	}
	return f, nil
}

// filterTime is a request's time, zero when unset.
func filterTime(field string, ts *timestamppb.Timestamp) (time.Time, error) {
	if ts == nil {
		return time.Time{}, nil
	}
	if err := ts.CheckValid(); err != nil {
		return time.Time{}, errs.Field(field, "is not a valid time: %v", err)
	}
	return ts.AsTime(), nil
}

// pages names the list the filter's page tokens point into: "tasks"
// for the zero filter, and for any other "tasks~" and a digest of the
// filters, so that a token of other filters is refused.
func (f TaskFilter) pages(req *stewardv1.ListTasksRequest) string {
	key := &stewardv1.ListTasksRequest{
		Statuses: req.Statuses, Owner: req.Owner, RiskTiers: req.RiskTiers, Tool: req.Tool,
		Text: req.Text, CreatedAfter: req.CreatedAfter, CreatedBefore: req.CreatedBefore, ParentTaskId: req.ParentTaskId,
		ObjectiveId: req.ObjectiveId,
	}
	if proto.Size(key) == 0 {
		return taskPages
	}
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(key)
	sum := sha256.Sum256(b)
	return taskPages + "~" + hex.EncodeToString(sum[:8])
}

// match reports whether the task of v passes the filter. The cheap
// tests come first; the text last.
func (f TaskFilter) match(v *view) bool {
	t := v.task
	k := t.Contract
	switch {
	case len(f.Statuses) > 0 && !slices.Contains(f.Statuses, t.Status):
		return false
	case f.Owner != "" && k.GetAccountableOwnerRef() != f.Owner:
		return false
	case f.Parent != "" && k.GetParentTaskId() != f.Parent:
		return false
	case f.Objective != "" && k.GetObjectiveId() != f.Objective:
		return false
	case len(f.RiskTiers) > 0 && !slices.Contains(f.RiskTiers, k.GetRiskTier()):
		return false
	case !f.CreatedAfter.IsZero() && t.CreatedAt.AsTime().Before(f.CreatedAfter):
		return false
	case !f.CreatedBefore.IsZero() && !t.CreatedAt.AsTime().Before(f.CreatedBefore):
		return false
	case f.Tool != "" && !v.names(f.Tool):
		return false
	}
	return f.Text == "" || containsFold(k.GetIntent(), f.Text) || containsFold(k.GetDesiredOutcome(), f.Text) || containsFold(k.GetTaskId(), f.Text)
}

// names reports whether the task may call the tool or has proposed an
// action of it.
func (v *view) names(tool string) bool {
	if _, ok := v.tools[tool]; ok {
		return true
	}
	for _, a := range v.task.Contract.GetAllowedTools() {
		if name, _, _ := strings.Cut(a, "@"); name == tool {
			return true
		}
	}
	return false
}

// containsFold reports whether sub is within s, ignoring case (Unicode
// simple folding), without copying either. Where sub begins with an ASCII
// rune, an ASCII byte of s that is not that letter in either case is
// passed over at once: it cannot begin a match.
func containsFold(s, sub string) bool {
	if sub == "" {
		return true
	}
	first := sub[0]
	if first < utf8.RuneSelf {
		first = lowerASCII(first)
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf && first < utf8.RuneSelf {
			if lowerASCII(c) == first && hasPrefixFold(s[i+1:], sub[1:]) {
				return true
			}
			i++
			continue
		}
		if hasPrefixFold(s[i:], sub) {
			return true
		}
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func hasPrefixFold(s, prefix string) bool {
	for prefix != "" {
		if s == "" {
			return false
		}
		r, w := utf8.DecodeRuneInString(s)
		q, wq := utf8.DecodeRuneInString(prefix)
		if r != q && !foldEqual(r, q) {
			return false
		}
		s, prefix = s[w:], prefix[wq:]
	}
	return true
}

func foldEqual(r, q rune) bool {
	if r < utf8.RuneSelf && q < utf8.RuneSelf {
		return lowerASCII(byte(r)) == lowerASCII(byte(q))
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f == q {
			return true
		}
	}
	return false
}
