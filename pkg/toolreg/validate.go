package toolreg

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/limits"
)

// BuiltinKinds are the tools the execution plane runs itself.
var BuiltinKinds = []string{"noop", "file.write", "kv.append"}

// The documented ranges of the durations in a tool contract and in a
// proposal's retry policy. Zero (or unset) means the default.
const (
	// MinTimeout and MaxTimeout bound a tool's call timeout: a call that
	// may not take 100 ms cannot be answered, and a caller waiting more
	// than 10 minutes should be polling a status query.
	MinTimeout = 100 * time.Millisecond
	MaxTimeout = 10 * time.Minute
	// MinRetryBackoff and MaxRetryBackoff bound retry_policy's
	// initial_backoff and max_backoff: shorter is a hot loop against a
	// failing service, longer is a retry nobody waits for.
	MinRetryBackoff = 10 * time.Millisecond
	MaxRetryBackoff = 24 * time.Hour
	// MinRetryElapsed and MaxRetryElapsed bound retry_policy.max_elapsed.
	MinRetryElapsed = time.Second
	MaxRetryElapsed = 30 * 24 * time.Hour
	// MinRetention and MaxRetention bound idempotency.retention, how long
	// the tool remembers an op_key.
	MinRetention = time.Second
	MaxRetention = 10 * 365 * 24 * time.Hour
)

// MaxAttempts bounds a retry policy's attempts.
const MaxAttempts = 100

// Validate checks a contract before it is registered and names the first
// field that is wrong; its schemas compile under the registry's bound.
func (r *Registry) Validate(c *stewardv1.ToolContract) error { return validate(c, r.heavy) }

func validate(c *stewardv1.ToolContract, heavy *action.Heavy) error {
	if c == nil {
		return errs.Field("contract", "is required")
	}
	switch {
	case c.Name == "":
		return errs.Field("contract.name", "is required")
	case !eventlog.ValidTaskID(c.Name):
		return errs.Field("contract.name", "%s: want 1-64 letters, digits, '-' or '_'", errs.Quote(c.Name))
	case c.Version == "":
		return errs.Field("contract.version", "is required")
	case len(c.Version) > 64:
		return errs.Field("contract.version", "is longer than 64 bytes")
	case len(c.Description) > 4096:
		return &errs.Error{Code: errs.TooLarge, Field: "contract.description", Message: "is longer than 4096 bytes"}
	}
	if err := checkSchema(heavy, "contract.parameters_schema", c.ParametersSchema); err != nil {
		return err
	}
	if c.ResultSchema != "" {
		if err := checkSchema(heavy, "contract.result_schema", c.ResultSchema); err != nil {
			return err
		}
	}
	if err := validateRetryPolicy(c.RetryPolicy); err != nil {
		return err
	}
	if c.CostMicrosPerCall < 0 {
		return errs.Field("contract.cost_micros_per_call", "must not be negative")
	}
	if _, ok := stewardv1.EffectClass_name[int32(c.EffectClass)]; !ok || c.EffectClass == stewardv1.EffectClass_EFFECT_CLASS_UNSPECIFIED {
		return errs.Field("contract.effect_class", "is required: EFFECT_CLASS_READ, _IDEMPOTENT_WRITE, _REVERSIBLE_WRITE or _IRREVERSIBLE")
	}
	// Fail closed: an unset sensitivity would read to policy as the
	// mildest, and a write to restricted data would run unapproved.
	if _, ok := stewardv1.DataSensitivity_name[int32(c.DataSensitivity)]; !ok || c.DataSensitivity == stewardv1.DataSensitivity_DATA_SENSITIVITY_UNSPECIFIED {
		return errs.Field("contract.data_sensitivity", "is required: DATA_SENSITIVITY_PUBLIC, _INTERNAL, _CONFIDENTIAL or _RESTRICTED")
	}
	if _, ok := stewardv1.ApprovalRule_name[int32(c.DefaultApproval)]; !ok {
		return errs.Field("contract.default_approval", "%d is not a known approval rule", c.DefaultApproval)
	}
	if err := limits.Duration("contract.timeout", c.Timeout, MinTimeout, MaxTimeout); err != nil {
		return err
	}
	if err := checkIdempotency(c.Idempotency); err != nil {
		return err
	}
	if err := checkLimits(c.Limits); err != nil {
		return err
	}
	// The breaker counts against this key; one it could not record would
	// hold actions behind an open breaker that no view shows.
	if c.ServiceKey != "" {
		if err := eventlog.CheckServiceKey("contract.service_key", c.ServiceKey); err != nil {
			return err
		}
	}
	if c.EffectClass == stewardv1.EffectClass_EFFECT_CLASS_REVERSIBLE_WRITE && c.CompensatingTool == "" {
		return errs.Field("contract.compensating_tool", "is required for a reversible write: name the tool that undoes it")
	}
	return checkEndpoint(c)
}

// checkEndpoint checks where c's tool is reached: an HTTP endpoint with
// its status URL, or a builtin kind.
func checkEndpoint(c *stewardv1.ToolContract) error {
	switch e := c.Endpoint.(type) {
	case *stewardv1.ToolContract_Http:
		if err := checkURL("contract.http.url", e.Http.Url, true); err != nil {
			return err
		}
		if err := checkURL("contract.http.status_url", e.Http.StatusUrl, false); err != nil {
			return err
		}
		// One decision, stated twice: a tool that declares a status query
		// says where it is, and a status URL is queried only when declared.
		if c.StatusQuery && e.Http.StatusUrl == "" {
			return errs.Field("contract.http.status_url", "is required when status_query is set")
		}
		if !c.StatusQuery && e.Http.StatusUrl != "" {
			return errs.Field("contract.status_query", "must be set when http.status_url is: set both, or neither")
		}
	case *stewardv1.ToolContract_Builtin:
		known := false
		for _, k := range BuiltinKinds {
			known = known || e.Builtin.Kind == k
		}
		if !known {
			return errs.Field("contract.builtin.kind", "%s is not one of %v", errs.Quote(e.Builtin.Kind), BuiltinKinds)
		}
	case *stewardv1.ToolContract_Model:
		return checkModel(c, e.Model)
	case *stewardv1.ToolContract_Mcp:
		return checkMCP(c, e.Mcp)
	default:
		return errs.Field("contract.endpoint", "is required: http, builtin, model or mcp")
	}
	return nil
}

// The idempotency a tool contract may declare (docs/retries.md, "What a
// tool declares about its key"): the one key scope Steward gives and the
// one behaviour on a repeated key it relies on. Other values are refused
// rather than recorded, because Steward would act on none of them.
const (
	// KeyScopeAction says one op_key covers one action: every dispatch of
	// it (retries, the one redispatch after "not accepted") carries it,
	// and no other action's does (op_key = H(task_id, action_id)).
	KeyScopeAction = "action"
	// OnRepeatReturnFirst says a call with a key the tool has seen does no
	// work and answers the first call's result (409 while that call is in
	// flight): what honours_key promises, and what lets Steward send a
	// call that may have arrived again within the retention.
	OnRepeatReturnFirst = "return_first"
)

// checkIdempotency checks contract.idempotency: key_scope empty or
// KeyScopeAction, on_repeat empty or OnRepeatReturnFirst, retention in its
// range; and none of them set on a tool that does not honour its key,
// since they describe how the key is honoured.
func checkIdempotency(i *stewardv1.IdempotencySupport) error {
	if i == nil {
		return nil
	}
	switch {
	case i.KeyScope != "" && i.KeyScope != KeyScopeAction:
		return errs.Field("contract.idempotency.key_scope", "%s is not a scope Steward gives: an op_key names one action (all its dispatches, and nothing else); use %q or leave it empty", errs.Quote(i.KeyScope), KeyScopeAction)
	case i.OnRepeat != "" && i.OnRepeat != OnRepeatReturnFirst:
		return errs.Field("contract.idempotency.on_repeat", "%s is not a behaviour Steward relies on: a repeated key must get the first call's result, without doing the work again; use %q or leave it empty", errs.Quote(i.OnRepeat), OnRepeatReturnFirst)
	}
	if err := limits.Duration("contract.idempotency.retention", i.Retention, MinRetention, MaxRetention); err != nil {
		return err
	}
	if !i.HonoursKey {
		for _, f := range []struct {
			name string
			set  bool
		}{{"key_scope", i.KeyScope != ""}, {"on_repeat", i.OnRepeat != ""}, {"retention", i.Retention != nil}} {
			if f.set {
				return errs.Field("contract.idempotency."+f.name, "describes how the tool honours its key, but honours_key is false: set honours_key, or leave it out")
			}
		}
	}
	return nil
}

// checkSchema compiles a schema, answering under field: TooLarge past one
// of action's schema limits, Invalid for anything else wrong with it.
func checkSchema(heavy *action.Heavy, field, doc string) error {
	_, err := heavy.CompileSchema(doc)
	if err == nil {
		return nil
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return &errs.Error{Code: e.Code, Field: field, Message: e.Message}
	}
	return errs.Field(field, "does not compile: %v", err)
}

func checkURL(field, s string, required bool) error {
	if s == "" {
		if required {
			return errs.Field(field, "is required")
		}
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errs.Field(field, "%s is not an absolute http(s) URL", errs.Quote(s))
	}
	return nil
}

// Key names a tool version in messages.
func Key(name, version string) string { return fmt.Sprintf("%s@%s", name, version) }

// validateRetryPolicy checks a contract's retry policy: every duration in
// its range, max_backoff not shorter than initial_backoff, and at most
// MaxAttempts attempts.
func validateRetryPolicy(p *stewardv1.RetryPolicy) error {
	if p == nil {
		return nil
	}
	if p.MaxAttempts > MaxAttempts {
		return errs.Field("contract.retry_policy.max_attempts", "is more than %d", MaxAttempts)
	}
	if err := CheckRetryDurations("contract.retry_policy.", p); err != nil {
		return err
	}
	if p.InitialBackoff != nil && p.MaxBackoff != nil && p.MaxBackoff.AsDuration() > 0 && p.InitialBackoff.AsDuration() > p.MaxBackoff.AsDuration() {
		return errs.Field("contract.retry_policy.initial_backoff", "is longer than max_backoff")
	}
	return nil
}

// CheckRetryDurations checks each duration of a retry policy, from a tool
// contract or a proposal, against its documented range, naming it as
// prefix + its name.
func CheckRetryDurations(prefix string, p *stewardv1.RetryPolicy) error {
	for _, err := range []error{
		limits.Duration(prefix+"initial_backoff", p.GetInitialBackoff(), MinRetryBackoff, MaxRetryBackoff),
		limits.Duration(prefix+"max_backoff", p.GetMaxBackoff(), MinRetryBackoff, MaxRetryBackoff),
		limits.Duration(prefix+"max_elapsed", p.GetMaxElapsed(), MinRetryElapsed, MaxRetryElapsed),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// MayRepeat reports whether a call of c that may have reached the tool may
// be sent again as it is: c reads, or honours its op_key (within its
// retention, which the caller checks against the time of the first try).
// Any other tool's call is made at most once per approval.
func MayRepeat(c *stewardv1.ToolContract) bool {
	return c.GetEffectClass() == stewardv1.EffectClass_EFFECT_CLASS_READ || c.GetIdempotency().GetHonoursKey()
}
