package natsperm

import "strings"

// Markdown returns the table as docs/nats.md shows it: one row per grant
// of each plane and the archiver, its subjects one per line. A test keeps the page equal
// to it, so the docs cannot drift from what the server enforces.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| plane | may | subjects | what for |\n| --- | --- | --- | --- |\n")
	for _, plane := range Users() {
		for _, g := range Grants(plane) {
			may := "publish"
			switch {
			case g.Deny:
				may = "**never** publish"
			case g.Subscribe:
				may = "subscribe"
			}
			subjects := make([]string, len(g.Subjects))
			for i, s := range g.Subjects {
				subjects[i] = "`" + s + "`"
			}
			b.WriteString("| " + plane + " | " + may + " | " + strings.Join(subjects, "<br>") + " | " + g.Why + " |\n")
		}
	}
	return b.String()
}
