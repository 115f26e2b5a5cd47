package notify_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/services/state/notify"
)

// TestASinksFileIsCheckedWhole refuses a sinks file that would not work,
// naming the field at fault.
func TestASinksFileIsCheckedWhole(t *testing.T) {
	const secret = `"secrets": ["whsec_c3Rld2FyZCBhcHByb3ZlcnMgc2VjcmV0IQ=="]`
	for _, c := range []struct{ file, field string }{
		{`{"sinks": [{"name": "a", "url": "https://h/x", ` + secret + `, "colour": "red"}]}`, "colour"},
		{`{"sinks": [{"name": "A b", "url": "https://h/x", ` + secret + `}]}`, "sinks[0].name"},
		{`{"sinks": [{"name": "a", "url": "https://h/x", ` + secret + `}, {"name": "a", "url": "https://h/y", ` + secret + `}]}`, "sinks[1].name"},
		{`{"sinks": [{"name": "a", "url": "ftp://h/x", ` + secret + `}]}`, "sinks[0].url"},
		{`{"sinks": [{"name": "a", "url": "https://h/x", "kinds": ["approval.maybe"], ` + secret + `}]}`, "sinks[0].kinds[0]"},
		{`{"sinks": [{"name": "a", "url": "https://h/x", "riskTiers": ["HIGH"], ` + secret + `}]}`, "sinks[0].riskTiers[0]"},
		{`{"sinks": [{"name": "a", "url": "https://h/x"}]}`, "sinks[0].secrets"},
		{`{"sinks": [{"name": "a", "url": "https://h/x", "secrets": ["whsec_c2hvcnQ="]}]}`, "sinks[0].secrets[0]"},
	} {
		_, err := notify.Parse([]byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v, want an error naming %s", c.file, err, c.field)
		}
	}
	f, err := notify.Parse([]byte(`{"sinks": [{"name": "ops-1", "url": "http://h/x", "kinds": ["task.ended"], "riskTiers": ["RISK_TIER_HIGH"], ` + secret + `}]}`))
	if err != nil || len(f.Sinks) != 1 {
		t.Fatalf("a good file: %v", err)
	}
}

// TestSignIsStandardWebhooks signs the Standard Webhooks specification's
// own example (its secret, id, timestamp and body) to its signature, and
// signs once per key.
func TestSignIsStandardWebhooks(t *testing.T) {
	key, err := base64.StdEncoding.DecodeString("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := notify.Sign([][]byte{key}, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("signed %q, want the specification's %q", got, want)
	}
	if two := strings.Fields(notify.Sign([][]byte{key, []byte("an older secret")}, "m", time.Unix(1, 0), nil)); len(two) != 2 || two[0] == two[1] {
		t.Errorf("two keys signed %q", two)
	}
}
