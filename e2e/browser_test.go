package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser kit: headless Chromium driven over the DevTools protocol
// (chromedp), the console signed in as one person per tab, axe-core run
// inside the page, and screenshots for docs/console when asked.

// browserWait bounds one wait on the page: a condition of the DOM, polled
// on every mutation, never a sleep.
const browserWait = 30 * time.Second

// chromium is the browser's path: STEWARD_CHROMIUM, or the first of the
// usual names on the PATH. Under CI=true a missing browser fails the test
// (.ci/run installs Debian's chromium); elsewhere it skips it.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("STEWARD_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	requireTools(t, "chromium")
	return ""
}

// browser starts one headless Chromium for the test, with a laptop's
// screen (1366x768); tabs opened from it share the process, not their
// sessionStorage, so each signs in as its own person.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.WindowSize(1366, 768))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium will not sandbox itself as root (containers)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", chromium(t), err)
	}
	return ctx
}

// page is one tab with the console open, signed in as one person.
type page struct {
	t   *testing.T
	ctx context.Context
	url string
	mu  sync.Mutex
	// problems are what the page's console said that a page keeping its
	// own Content-Security-Policy never says: a violation, an uncaught
	// exception.
	problems []string
}

// openConsole opens a tab on the console at url and signs in with token.
func openConsole(t *testing.T, b context.Context, url, token string) *page {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b)
	t.Cleanup(cancel)
	p := &page{t: t, ctx: ctx, url: url}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || strings.Contains(m.Text, "Content Security Policy") || strings.Contains(m.Text, "Content-Security-Policy") {
				p.mu.Lock()
				p.problems = append(p.problems, m.String())
				p.mu.Unlock()
			}
		}
	}()
	p.do(chromedp.Navigate(url + "/console/"))
	p.do(chromedp.WaitVisible(chromedp.CSS("#token")))
	p.do(chromedp.SendKeys(chromedp.CSS("#token"), token))
	p.do(chromedp.Click(chromedp.CSS(`form.signin button[type="submit"]`)))
	p.until(`document.getElementById('who').textContent !== ''`)
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, m := range p.problems {
			t.Errorf("the console said: %s", m)
		}
	})
	return p
}

func (p *page) do(a chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, a); err != nil {
		p.t.Fatalf("%v\n%s", err, p.text("main"))
	}
}

// go opens a route of the console (#/inbox, #/task/ID).
func (p *page) goTo(route string) {
	p.t.Helper()
	p.do(chromedp.Navigate(p.url + "/console/" + route))
}

// until waits for the JavaScript condition to hold in the page, checking it
// on every change of the DOM.
func (p *page) until(cond string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserWait+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(browserWait))); err != nil {
		p.t.Fatalf("waiting for %s: %v\nthe page shows:\n%s", cond, err, p.text("main"))
	}
}

// eval runs expr in the page (awaiting a promise) and returns its value.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func (p *page) text(sel string) string {
	v, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).innerText || ''`, sel)))
	return v
}

// axeViolation is what axe-core reports of one rule the page breaks.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any `json:"target"`
	} `json:"nodes"`
}

// accessible runs axe-core (e2e/console's pinned package) inside the page
// and fails the test on every serious or critical violation.
func (p *page) accessible(what string) {
	p.t.Helper()
	src, err := os.ReadFile(axeScript(p.t))
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := chromedp.Run(p.ctx, chromedp.Evaluate[chromedp.Void](string(src)+";undefined")); err != nil {
		p.t.Fatalf("load axe-core: %v", err)
	}
	out := eval[string](p, `axe.run(document, {resultTypes: ['violations']}).then(r => JSON.stringify(r.violations))`)
	var vs []axeViolation
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		p.t.Fatal(err)
	}
	for _, v := range vs {
		if v.Impact == "serious" || v.Impact == "critical" {
			p.t.Errorf("%s: axe-core finds a %s violation, %s (%s), at %v", what, v.Impact, v.ID, v.Help, v.Nodes)
		} else {
			p.t.Logf("%s: axe-core finds a %s issue, %s (%s)", what, v.Impact, v.ID, v.Help)
		}
	}
}

// axeScript is axe-core's script, installed by npm ci in e2e/console when
// missing (as the TypeScript client's dependencies are).
func axeScript(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("console")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "node_modules", "axe-core", "axe.min.js")
	if _, err := os.Stat(script); err != nil {
		requireTools(t, "npm")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		runNode(ctx, t, dir, nil, "npm", "ci", "--no-audit", "--no-fund")
	}
	return script
}

// screenshot writes the element sel shows as name.png into the directory
// STEWARD_SCREENSHOTS names (docs/console); without it, nothing.
func (p *page) screenshot(sel, name string) {
	p.t.Helper()
	dir := os.Getenv("STEWARD_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(p.ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// press clicks the element s within the element scope once it is enabled:
// the console arms a decision's buttons a second after drawing them.
func (p *page) press(scope, s string) {
	p.t.Helper()
	q := scope + " " + s
	p.until(fmt.Sprintf(`(document.querySelector(%q) || {}).disabled === false`, q))
	p.do(chromedp.Click(chromedp.CSS(q), chromedp.NodeVisible))
}

// setValue sets the value of the field s within the element scope.
func setValue(scope, s, value string) chromedp.Action[chromedp.Void] {
	return chromedp.SetValue(chromedp.CSS(scope+" "+s), value, chromedp.NodeVisible)
}
