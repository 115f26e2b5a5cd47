package task

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// MaxArtifacts caps the artifact versions one task may record: criteria
// read the latest of each, and a bound keeps that, and the task's view,
// small.
const MaxArtifacts = 256

// CriteriaAcceptor is who a round accepted without review is decided by.
const CriteriaAcceptor = "acceptance criteria"

// acceptanceStep checks an artifact or acceptance event against t and
// returns the change to make; ok is false for other events. Produced is
// not accepted: a round whose checks failed sends the task back to
// running; one that passed is accepted only by the contract's acceptance
// owner when review is required. Who may accept or return is checked here,
// in the fold, so that an auditor's replay checks it too.
func acceptanceStep(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), ok bool, err error) {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_ArtifactSubmitted:
		a := p.ArtifactSubmitted.GetArtifact()
		if err := checkArtifact(t, a); err != nil {
			return nil, true, err
		}
		return func() { t.Artifacts = append(t.Artifacts, a) }, true, nil
	case *stewardv1.Event_TaskProduced:
		pr := p.TaskProduced
		if err := checkProduced(t, pr); err != nil {
			return nil, true, err
		}
		return func() {
			r := &stewardv1.AcceptanceRound{
				Round: pr.Round, ProducedAt: ev.Time, ProducedBy: ev.Actor.GetPrincipal(),
				Checks: pr.Checks, Artifacts: pr.Artifacts, Report: pr.Report,
			}
			failed := failedChecks(pr)
			switch ProducedStatus(pr) {
			case stewardv1.TaskStatus_TASK_STATUS_RUNNING:
				r.Decision, r.DecidedAt = stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_CHECKS_FAILED, ev.Time
				r.Reasons = []string{"acceptance checks failed: " + strings.Join(failed, ", ")}
				t.Status, t.StatusReason = stewardv1.TaskStatus_TASK_STATUS_RUNNING, r.Reasons[0]
			case stewardv1.TaskStatus_TASK_STATUS_PRODUCED:
				r.Decision = stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_PENDING
				t.Status = stewardv1.TaskStatus_TASK_STATUS_PRODUCED
				t.StatusReason = fmt.Sprintf("produced (round %d); waiting for %s to accept or return it", pr.Round, t.Contract.GetAcceptanceOwnerRef())
			default:
				r.Decision, r.DecidedBy, r.DecidedAt = stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_ACCEPTED, CriteriaAcceptor, ev.Time
				t.Status, t.StatusReason = stewardv1.TaskStatus_TASK_STATUS_ACCEPTED, "accepted: every acceptance check passed"
			}
			t.Acceptance = append(t.Acceptance, r)
		}, true, nil
	case *stewardv1.Event_TaskAccepted:
		a := p.TaskAccepted
		if err := checkReview(t, ev, a.Round, "accept"); err != nil {
			return nil, true, err
		}
		return func() {
			r := decide(t, ev, stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_ACCEPTED, orNone(a.Reason))
			t.Status, t.StatusReason = stewardv1.TaskStatus_TASK_STATUS_ACCEPTED, "accepted by "+r.DecidedBy
		}, true, nil
	case *stewardv1.Event_TaskReturned:
		rt := p.TaskReturned
		if err := checkReview(t, ev, rt.Round, "return"); err != nil {
			return nil, true, err
		}
		if len(rt.Reasons) == 0 {
			return nil, true, errs.Field("reasons", "say what must change: at least one reason")
		}
		return func() {
			r := decide(t, ev, stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_RETURNED, rt.Reasons)
			t.Status = stewardv1.TaskStatus_TASK_STATUS_RUNNING
			t.StatusReason = fmt.Sprintf("returned by %s for revision: %s", r.DecidedBy, strings.Join(rt.Reasons, "; "))
		}, true, nil
	}
	return nil, false, nil
}

// decide records the acceptance owner's decision on the current round. The
// round is copied, not changed in place: earlier folds may share it.
func decide(t *stewardv1.Task, ev *stewardv1.Event, d stewardv1.AcceptanceDecision, reasons []string) *stewardv1.AcceptanceRound {
	last := len(t.Acceptance) - 1
	r := proto.CloneOf(t.Acceptance[last])
	r.Decision, r.DecidedBy, r.DecidedAt, r.Reasons = d, ev.Actor.GetPrincipal(), ev.Time, reasons
	t.Acceptance = append(slices.Clip(t.Acceptance[:last]), r)
	return r
}

func checkArtifact(t *stewardv1.Task, a *stewardv1.Artifact) error {
	id := t.Contract.GetTaskId()
	switch {
	case !Active(t.Status):
		return illegal(t, "submit an artifact to")
	case t.Credential.GetRevoked():
		return revokedWork(t, "submit artifacts")
	case a == nil || a.Name == "":
		return errs.Field("name", "is required")
	case len(t.Artifacts) >= MaxArtifacts:
		return errs.New(errs.FailedPrecondition, "task %s already has %d artifact versions, the most a task may record", id, MaxArtifacts)
	case a.SizeBytes < 0:
		return errs.Field("size_bytes", "must not be negative")
	case !ValidSHA256(a.Sha256):
		return errs.Field("sha256", "%s is not 64 lowercase hex digits", errs.Quote(a.Sha256))
	case a.Uri == "":
		return errs.Field("uri", "is required")
	case a.Version != uint32(len(ArtifactVersions(t, a.Name)))+1:
		return errs.New(errs.FailedPrecondition, "task %s: artifact %s is at version %d, so the next is %d, not %d",
			id, errs.Quote(a.Name), len(ArtifactVersions(t, a.Name)), len(ArtifactVersions(t, a.Name))+1, a.Version)
	}
	if a.ActionId != "" {
		if act := FindAction(t, a.ActionId); act == nil || act.Status != succeeded {
			return errs.Field("action_id", "task %s has no succeeded action %s", id, a.ActionId)
		}
	}
	return nil
}

// revokedWork refuses work handed in under a revoked credential. The fold
// sees only the task's own revocation; the control plane also refuses
// under an ancestor's, which it finds by walking up.
func revokedWork(t *stewardv1.Task, what string) error {
	return errs.New(errs.FailedPrecondition, "task %s may not %s: its credential %s was revoked (%s)",
		t.Contract.GetTaskId(), what, t.Credential.GetCredential().GetCredentialId(), t.Credential.GetRevokedReason())
}

func checkProduced(t *stewardv1.Task, pr *stewardv1.TaskProduced) error {
	switch {
	case !Active(t.Status):
		return illegal(t, "mark produced")
	case t.Credential.GetRevoked():
		return revokedWork(t, "mark its result produced")
	case len(t.Progress.GetRemaining()) > 0:
		// With a plan, its unfinished steps are under way too (followPlan).
		return errs.New(errs.FailedPrecondition, "task %s still has %d steps or actions under way (%s): produce the result when they have ended",
			t.Contract.GetTaskId(), len(t.Progress.Remaining), strings.Join(t.Progress.Remaining, ", "))
	case pr.Round != uint32(len(t.Acceptance))+1:
		return errs.New(errs.FailedPrecondition, "task %s: the next acceptance round is %d, not %d", t.Contract.GetTaskId(), len(t.Acceptance)+1, pr.Round)
	case pr.ReviewRequired != ReviewRequired(t.Contract):
		return errs.New(errs.FailedPrecondition, "task %s: the produced result says review_required=%t, but its contract says %t", t.Contract.GetTaskId(), pr.ReviewRequired, ReviewRequired(t.Contract))
	}
	// One check per criterion of the contract, in its order: a round that
	// leaves one out, or adds one, is not the contract's.
	criteria := t.Contract.GetAcceptanceCriteria()
	if len(pr.Checks) != len(criteria) {
		return errs.New(errs.FailedPrecondition, "task %s: the produced result has %d checks for %d acceptance criteria", t.Contract.GetTaskId(), len(pr.Checks), len(criteria))
	}
	for i, c := range criteria {
		if pr.Checks[i].GetCriterionId() != c.Id {
			return errs.New(errs.FailedPrecondition, "task %s: check %d is for criterion %s, not %s", t.Contract.GetTaskId(), i, errs.Quote(pr.Checks[i].GetCriterionId()), errs.Quote(c.Id))
		}
	}
	for _, ref := range pr.Artifacts {
		if FindArtifact(t, ref) == nil {
			return errs.New(errs.FailedPrecondition, "task %s has no artifact %s", t.Contract.GetTaskId(), ref)
		}
	}
	return CheckReport(t, pr.Report)
}

// checkReview checks that the event's actor may decide on t's current
// round: the task is produced, the round is the current one, the actor is
// the acceptance owner, and, under separation of duties, none of those
// who asked for or did the work: the requester, the creator, the
// principal its credential was issued to, and who produced the round.
func checkReview(t *stewardv1.Task, ev *stewardv1.Event, round uint32, verb string) error {
	who, c := ev.Actor.GetPrincipal(), t.Contract
	worker := who == t.Credential.GetCredential().GetPrincipal() || len(t.Acceptance) > 0 && who == t.Acceptance[len(t.Acceptance)-1].ProducedBy
	switch {
	case t.Status != stewardv1.TaskStatus_TASK_STATUS_PRODUCED:
		return illegal(t, verb)
	case round != uint32(len(t.Acceptance)):
		return errs.New(errs.FailedPrecondition, "task %s is in acceptance round %d, not %d", c.GetTaskId(), len(t.Acceptance), round)
	case who != c.GetAcceptanceOwnerRef():
		return errs.New(errs.PermissionDenied, "%s may not %s task %s: only its acceptance owner %s may", who, verb, c.GetTaskId(), c.GetAcceptanceOwnerRef())
	case c.GetSeparationOfDuties() && (who == c.GetRequesterRef() || who == t.CreatedBy || worker):
		return errs.New(errs.PermissionDenied, "%s may not %s task %s: they requested, created or worked on it, and its contract separates duties", who, verb, c.GetTaskId())
	}
	return nil
}

// ArtifactVersions returns every version of the artifact name, oldest
// first.
func ArtifactVersions(t *stewardv1.Task, name string) []*stewardv1.Artifact {
	var out []*stewardv1.Artifact
	for _, a := range t.Artifacts {
		if a.Name == name {
			out = append(out, a)
		}
	}
	return out
}

// LatestArtifacts returns the newest version of each artifact, in the
// order their names first appeared.
func LatestArtifacts(t *stewardv1.Task) []*stewardv1.Artifact {
	var out []*stewardv1.Artifact
	index := map[string]int{}
	for _, a := range t.Artifacts {
		if i, ok := index[a.Name]; ok {
			out[i] = a
			continue
		}
		index[a.Name] = len(out)
		out = append(out, a)
	}
	return out
}

// ArtifactRef names one version of an artifact: "name@version".
func ArtifactRef(a *stewardv1.Artifact) string { return fmt.Sprintf("%s@%d", a.Name, a.Version) }

// FindArtifact returns the artifact ref names, or nil.
func FindArtifact(t *stewardv1.Task, ref string) *stewardv1.Artifact {
	for _, a := range t.Artifacts {
		if ArtifactRef(a) == ref {
			return a
		}
	}
	return nil
}

// ReviewRequired reports whether a person must accept t's result after its
// checks pass: the contract names an acceptance owner, or a criterion asks
// for a reviewer.
func ReviewRequired(c *stewardv1.TaskContract) bool {
	if c.GetAcceptanceOwnerRef() != "" {
		return true
	}
	return slices.ContainsFunc(c.GetAcceptanceCriteria(), (*stewardv1.AcceptanceCriterion).GetRequiresReviewer)
}

// ValidSHA256 reports whether s is a SHA-256 as artifacts carry it: 64
// lowercase hex digits.
func ValidSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

func orNone(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// failedChecks are the criteria a production's checks did not pass.
func failedChecks(pr *stewardv1.TaskProduced) []string {
	var failed []string
	for _, c := range pr.Checks {
		if !c.Passed {
			failed = append(failed, c.CriterionId)
		}
	}
	return failed
}

// ProducedStatus is the status a production leaves its task in: running
// again when a check failed, produced while a person must accept or
// return it, accepted by its criteria otherwise — with no TaskAccepted of
// its own.
func ProducedStatus(pr *stewardv1.TaskProduced) stewardv1.TaskStatus {
	switch {
	case len(failedChecks(pr)) > 0:
		return stewardv1.TaskStatus_TASK_STATUS_RUNNING
	case pr.ReviewRequired:
		return stewardv1.TaskStatus_TASK_STATUS_PRODUCED
	}
	return stewardv1.TaskStatus_TASK_STATUS_ACCEPTED
}

// Ends reports whether ev ends its task: an acceptance, a cancellation, a
// failure, or a production its criteria accepted.
func Ends(ev *stewardv1.Event) bool {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_TaskAccepted, *stewardv1.Event_TaskCancelled, *stewardv1.Event_TaskFailed:
		return true
	case *stewardv1.Event_TaskProduced:
		return ProducedStatus(p.TaskProduced) == stewardv1.TaskStatus_TASK_STATUS_ACCEPTED
	}
	return false
}
