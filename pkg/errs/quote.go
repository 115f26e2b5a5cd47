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
	return strconv.Quote(s[:runeCut(s, MaxEcho)]) + "…"
}

// Cut cuts s to at most n bytes on a rune boundary, marking a cut with
// "…": for text from outside that an error or an event repeats.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:runeCut(s, n)] + "…"
}

// runeCut is the largest index at most n that starts a rune of s.
func runeCut(s string, n int) int {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}
