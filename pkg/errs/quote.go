package errs

import (
	"strconv"
	"unicode/utf8"
)

// MaxEcho bounds how many bytes of a caller's value an error message
// repeats: an answer must not grow with the input that was refused.
const MaxEcho = 64

// Quote returns s quoted for an error message, cut after MaxEcho bytes (at
// a rune boundary) with "…" when it is longer. Quoting escapes control
// characters, so the value cannot forge lines in a log or a terminal.
func Quote(s string) string {
	if len(s) <= MaxEcho {
		return strconv.Quote(s)
	}
	cut := MaxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}
