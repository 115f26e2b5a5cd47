package state

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"
)

// md writes a receipt's Markdown: lines, sections and tables, each shaped
// in one place so that every section of the receipt reads alike.
type md struct{ b *strings.Builder }

// line writes one line, formatted.
func (w md) line(format string, args ...any) { fmt.Fprintf(w.b, format+"\n", args...) }

// section starts a section titled title.
func (w md) section(title string) {
	w.line("")
	w.line("## %s", title)
	w.line("")
}

// table writes a table: head names the columns, separated by " | ", a name
// starting with ">" right-aligned; each row holds one cell per column.
func (w md) table(head string, rows [][]string) {
	names := strings.Split(head, " | ")
	rules := make([]string, len(names))
	for i, n := range names {
		rules[i] = "---"
		if name, ok := strings.CutPrefix(n, ">"); ok {
			names[i], rules[i] = name, "---:"
		}
	}
	w.line("| %s |", strings.Join(names, " | "))
	w.line("| %s |", strings.Join(rules, " | "))
	for _, r := range rows {
		w.line("| %s |", strings.Join(r, " | "))
	}
}

// when formats a time in UTC, to the millisecond; "" when unset.
func when(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return ""
	}
	return ts.AsTime().UTC().Format("2006-01-02T15:04:05.000Z")
}

// mdEscaper backslash-escapes the characters that would make text format
// itself (emphasis, links, HTML, code, tables); newlines become spaces so
// that one value stays on one line.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `[`, `\[`, `]`, `\]`,
	`<`, `\<`, `>`, `\>`, `|`, `\|`, `~`, `\~`, `&`, `\&`,
	"\r\n", " ", "\n", " ", "\r", " ",
)

// text escapes s for Markdown, in running text and in table cells alike.
func text(s string) string { return mdEscaper.Replace(s) }

// code puts s in a code span, fenced with more backticks than s holds in a
// row. In a table cell, "|" is escaped: GFM splits cells before it reads
// code spans.
func code(s string, cell bool) string {
	if s == "" {
		return ""
	}
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	if cell {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "not recorded"
	}
	return s
}

// orEmptyText is s when cond is not empty, else "".
func orEmptyText(s, cond string) string {
	if cond == "" {
		return ""
	}
	return s
}
