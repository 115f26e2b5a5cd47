package notify

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Sink is one receiver of notifications, as the sinks file names it.
type Sink struct {
	// Name names the sink in metrics and logs, and its durable consumer:
	// renaming a sink starts it afresh.
	Name string `json:"name"`
	// URL is where notifications are POSTed: https://, or http:// to a
	// receiver the operator trusts the network to.
	URL string `json:"url"`
	// Kinds are the notifications it takes (Kinds()); all when empty.
	Kinds []string `json:"kinds,omitempty"`
	// Tenant, when set, limits it to that tenant's tasks: a tenant's sink
	// receives nothing of another's. Empty takes every tenant's.
	Tenant string `json:"tenant,omitempty"`
	// Tasks and RiskTiers, when set, limit it to those tasks, and to tasks
	// of those risk tiers (RISK_TIER_HIGH).
	Tasks     []string `json:"tasks,omitempty"`
	RiskTiers []string `json:"riskTiers,omitempty"`
	// Secrets sign each notification, each one a signature of its own
	// (Sign): during a rotation both the new and the old secret are
	// listed, and a receiver that knows either accepts. Each is
	// "whsec_" and the base64 of at least 16 random bytes.
	Secrets []string `json:"secrets"`

	keys  [][]byte
	tiers []stewardv1.RiskTier
}

// File is the sinks file: {"sinks": [...]}.
type File struct {
	Sinks []Sink `json:"sinks"`
}

// sinkName is what a sink's name may be: it is part of a consumer's name.
var sinkName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// Parse reads a sinks file, refusing what would not work, with the field
// at fault: an unknown field or kind, a name used twice, a URL that is
// not http(s), a sink without a secret.
func Parse(data []byte) (*File, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("sinks file: %w", err)
	}
	seen := map[string]bool{}
	for i := range f.Sinks {
		s := &f.Sinks[i]
		at := fmt.Sprintf("sinks[%d]", i)
		if !sinkName.MatchString(s.Name) {
			return nil, fmt.Errorf("%s.name: %q is not lower-case letters, digits, - and _ (at most 63, a letter or digit first)", at, s.Name)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("%s.name: %q names two sinks", at, s.Name)
		}
		seen[s.Name] = true
		if err := s.check(at); err != nil {
			return nil, err
		}
	}
	return &f, nil
}

// check checks one sink and reads its keys and tiers.
func (s *Sink) check(at string) error {
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%s.url: %q is not an http:// or https:// URL", at, s.URL)
	}
	for j, k := range s.Kinds {
		if _, ok := kindNamed(k); !ok {
			return fmt.Errorf("%s.kinds[%d]: %q is not a notification (one of %s)", at, j, k, strings.Join(Kinds(), ", "))
		}
	}
	for j, t := range s.RiskTiers {
		v, ok := stewardv1.RiskTier_value[t]
		if !ok || v == 0 {
			return fmt.Errorf("%s.riskTiers[%d]: %q is not a risk tier (RISK_TIER_LOW, …)", at, j, t)
		}
		s.tiers = append(s.tiers, stewardv1.RiskTier(v))
	}
	if len(s.Secrets) == 0 {
		return fmt.Errorf("%s.secrets: a sink needs a signing secret (\"whsec_\" and the base64 of 16 or more random bytes)", at)
	}
	for j, sec := range s.Secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sec, secretPrefix))
		if !strings.HasPrefix(sec, secretPrefix) || err != nil || len(key) < 16 {
			return fmt.Errorf("%s.secrets[%d]: not \"whsec_\" and the base64 of 16 or more bytes", at, j)
		}
		s.keys = append(s.keys, key)
	}
	return nil
}

// Load reads and parses the sinks file at path.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// takes reports whether the sink takes kind.
func (s *Sink) takes(kind string) bool {
	return len(s.Kinds) == 0 || slices.Contains(s.Kinds, kind)
}

// same reports whether s and o deliver alike: a sink whose entry did not
// change keeps running across a reload.
func (s *Sink) same(o *Sink) bool {
	a, _ := json.Marshal(s)
	b, _ := json.Marshal(o)
	return bytes.Equal(a, b)
}
