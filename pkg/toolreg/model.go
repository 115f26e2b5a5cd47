package toolreg

import (
	"strings"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// MaxModelTokens bounds a model tool's max_tokens: what one call may ask a
// model to write.
const MaxModelTokens = 1_000_000

const (
	maxModelRef = 256
	maxKeyFile  = 4096
)

func longestModelField(m *stewardv1.ModelEndpoint) string {
	switch {
	case len(m.Model) > maxModelRef:
		return "contract.model.model"
	case len(m.Provider) > maxModelRef:
		return "contract.model.provider"
	}
	return "contract.model.key_file"
}

// IsModel reports whether c's tool is a model Steward calls itself
// (docs/models.md): a call to it is paid, and never sent again once it may
// have reached the provider.
func IsModel(c *stewardv1.ToolContract) bool { return c.GetModel() != nil }

// checkModel checks a model endpoint. A model call changes nothing in the
// world, so its tool is a read; what makes it unlike other reads — it is
// paid — is the execution plane's to honour, not the effect class's.
func checkModel(c *stewardv1.ToolContract, m *stewardv1.ModelEndpoint) error {
	if err := checkURL("contract.model.base_url", m.BaseUrl, true); err != nil {
		return err
	}
	switch {
	case len(m.Model) > maxModelRef || len(m.Provider) > maxModelRef || len(m.KeyFile) > maxKeyFile:
		return errs.Field(longestModelField(m), "is too long (model and provider at most %d bytes, key_file %d)", maxModelRef, maxKeyFile)
	case strings.TrimSpace(m.Model) == "":
		return errs.Field("contract.model.model", "is required: the model to ask")
	case strings.TrimSpace(m.Provider) == "":
		return errs.Field("contract.model.provider", "is required: who serves the model, as context items' egress lists name it")
	case m.MaxTokens < 1 || m.MaxTokens > MaxModelTokens:
		return errs.Field("contract.model.max_tokens", "is %d; it is from 1 to %d", m.MaxTokens, MaxModelTokens)
	case m.InputMicrosPer_1K < 0:
		return errs.Field("contract.model.input_micros_per_1k", "must not be negative")
	case m.OutputMicrosPer_1K < 0:
		return errs.Field("contract.model.output_micros_per_1k", "must not be negative")
	case c.EffectClass != stewardv1.EffectClass_EFFECT_CLASS_READ:
		return errs.Field("contract.effect_class", "is %v; a model tool is EFFECT_CLASS_READ: a call changes nothing in the world (it is paid, and never sent twice: docs/models.md)", c.EffectClass)
	case c.StatusQuery:
		return errs.Field("contract.status_query", "must not be set: a model offers no status query")
	case c.GetIdempotency().GetHonoursKey():
		return errs.Field("contract.idempotency.honours_key", "must not be set: a model does not honour the op_key, and a call that may have arrived is never sent again")
	}
	return nil
}
