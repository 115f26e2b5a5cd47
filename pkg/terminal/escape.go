// Package terminal makes text that came from outside — a reason, an
// intent, a principal, anything a client or a tool wrote — safe to print
// on a terminal. Printed raw, an escape sequence can clear the screen,
// retitle the window or rewrite what was printed before, and a Unicode
// bidirectional control can make a line read differently from the bytes
// it holds ("Trojan Source"). The functions here show such characters as
// visible escapes instead.
//
// Everything here is safe for concurrent use.
package terminal

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every character a terminal would act on rather
// than show replaced by a visible escape: C0 controls other than newline
// and tab, DEL, C1 controls, the Unicode bidirectional controls (U+061C,
// U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) and bytes that are not
// UTF-8 (some terminals read a lone 0x9B as CSI). A character becomes
// \uXXXX, which also keeps JSON output valid; a stray byte becomes \xNN.
// Newlines and tabs are kept: s may be multi-line text.
func Escape(s string) string { return escape(s, true) }

// EscapeLine is Escape for a value printed as part of one line: newlines
// and tabs are escaped too, so that the value cannot start a line of its
// own.
func EscapeLine(s string) string { return escape(s, false) }

func escape(s string, multiline bool) string {
	if clean(s, multiline) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafe(r, multiline):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// clean reports whether s holds nothing to escape, so that the common case
// allocates nothing.
func clean(s string, multiline bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return cleanRunes(s[i:], multiline)
		}
		if unsafe(rune(c), multiline) {
			return false
		}
	}
	return true
}

func cleanRunes(s string, multiline bool) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unsafe(r, multiline) {
			return false
		}
		i += size
	}
	return true
}

// unsafe reports whether a terminal would act on r rather than show it.
func unsafe(r rune, multiline bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return !multiline
	case r < 0x20 || r == 0x7f || 0x80 <= r && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f,
		0x202a <= r && r <= 0x202e,
		0x2066 <= r && r <= 0x2069:
		return true
	}
	return false
}

// NewWriter returns a writer that escapes, as Escape does, everything
// written to it before passing it to w. Each Write is escaped on its own,
// so a caller writes whole strings (as fmt and io.WriteString do). It
// reports len(p) as written when w took all of the escaped bytes.
func NewWriter(w io.Writer) io.Writer { return writer{w} }

type writer struct{ w io.Writer }

func (w writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, Escape(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
