package terminal_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/steward-run/steward/pkg/terminal"
)

func TestEscape(t *testing.T) {
	tests := []struct {
		name, in, text, line string
	}{
		{"plain", "all good: 42 €", "all good: 42 €", "all good: 42 €"},
		{"newline and tab", "a\n\tb", "a\n\tb", `a\u000a\u0009b`},
		{"terminal reset", "x\x1bcy", `x\u001bcy`, `x\u001bcy`},
		{"carriage return", "ok\rFAIL", `ok\u000dFAIL`, `ok\u000dFAIL`},
		{"bell and delete", "\a\x7f", `\u0007\u007f`, `\u0007\u007f`},
		{"C1 CSI", "a\u009b31mb", `a\u009b31mb`, `a\u009b31mb`},
		{"lone byte", "a\x9bb", `a\x9bb`, `a\x9bb`},
		{"right-to-left override", "invoice\u202egpj.exe", `invoice\u202egpj.exe`, `invoice\u202egpj.exe`},
		{"every bidi control", "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
			`\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069`,
			`\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069`},
		{"neighbours are kept", "\u200d\u2065\u2070", "\u200d\u2065\u2070", "\u200d\u2065\u2070"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := terminal.Escape(tt.in); got != tt.text {
				t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.text)
			}
			if got := terminal.EscapeLine(tt.in); got != tt.line {
				t.Errorf("EscapeLine(%q) = %q, want %q", tt.in, got, tt.line)
			}
		})
	}
}

func TestWriterEscapes(t *testing.T) {
	var out bytes.Buffer
	w := terminal.NewWriter(&out)
	if n, err := fmt.Fprintf(w, "reason: %s\n", "done\x1bc"); err != nil || n != len("reason: done\x1bc\n") {
		t.Fatalf("Fprintf = %d, %v", n, err)
	}
	if got, want := out.String(), "reason: done\\u001bc\n"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}

func ExampleEscape() {
	fmt.Println(terminal.Escape("cancelled: \x1bc\u202eyb devorppa"))
	// Output: cancelled: \u001bc\u202eyb devorppa
}
