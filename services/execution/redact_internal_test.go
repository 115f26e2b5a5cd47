package execution

import (
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/secret"
)

// TestRedactJSONEveryShape: a tool's result that echoes a secret value is
// kept without it whatever the value's shape and wherever the echo
// stands: a number or an object echoed as itself, a string inside a
// secret object, a secret used as a key.
func TestRedactJSONEveryShape(t *testing.T) {
	var forms []string
	for _, v := range []string{`8675309`, `{"inner":"s3cr3t-inner","port":7}`, `"s3cr3t-key"`} {
		forms = append(forms, secret.Forms([]byte(v))...)
	}
	body := `{"pin":8675309,"creds":{"inner":"s3cr3t-inner","port":7},"just":"s3cr3t-inner","by":{"s3cr3t-key":true},"list":[8675309],"kept":7}`
	got := string(redactJSON([]byte(body), forms))
	for _, clear := range []string{"8675309", "s3cr3t-inner", "s3cr3t-key"} {
		if strings.Contains(got, clear) {
			t.Errorf("the kept result %s holds %s", got, clear)
		}
	}
	if !strings.Contains(got, `"kept":7`) {
		t.Errorf("the kept result %s lost a value that is not secret", got)
	}
}
