package canary

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Exit codes of `steward canary run`, the same 3 as `steward policy
// canary`'s error.
const (
	ExitPass  = 0
	ExitFail  = 1
	ExitError = 3
)

// Report is a canary run judged, sample by sample.
type Report struct {
	Definition string    `json:"definition"`
	Against    string    `json:"against"`
	Verdicts   []Verdict `json:"samples"`
	Pass       bool      `json:"pass"`
	// BaselineWritten is set when --update-baseline wrote the file.
	BaselineWritten bool  `json:"baseline_written,omitempty"`
	Millis          int64 `json:"millis"`
	// StubCalls are the calls the recording stubs got, in order.
	StubCalls []Call `json:"stub_calls"`
}

// RunAll runs every sample of d in order and judges each against base
// (nil: no baseline).
func (r *Runner) RunAll(ctx context.Context, d *Definition, base *Baseline, against string) (*Report, error) {
	began := r.Now()
	rep := &Report{Definition: d.Name, Against: against, Pass: true}
	for _, s := range d.Samples {
		run, err := r.Run(ctx, s)
		if err != nil {
			return nil, err
		}
		var prior *Run
		if b, ok := base.run(s.Name); ok {
			prior = &b
		}
		v := Judge(s, run, prior, d.Tolerances)
		rep.Verdicts = append(rep.Verdicts, v)
		rep.Pass = rep.Pass && v.Pass
	}
	rep.Millis = r.Now().Sub(began).Milliseconds()
	return rep, nil
}

func (b *Baseline) run(sample string) (Run, bool) {
	if b == nil {
		return Run{}, false
	}
	r, ok := b.Runs[sample]
	return r, ok
}

// ExitCode is the report's exit code: 0 every sample passed, else 1.
func (rep *Report) ExitCode() int {
	if rep.Pass {
		return ExitPass
	}
	return ExitFail
}

// Baseline is the report's runs as the new baseline.
func (rep *Report) Baseline(now time.Time) *Baseline {
	b := &Baseline{Definition: rep.Definition, Written: now.UTC(), Against: rep.Against, Runs: map[string]Run{}}
	for _, v := range rep.Verdicts {
		run := v.Run
		run.TaskID = "" // a task of a Steward torn down
		b.Runs[v.Sample] = run
	}
	return b
}

// LoadBaseline reads the baseline in file; a file that does not exist is
// no baseline (nil), not an error.
func LoadBaseline(file, definition string) (*Baseline, error) {
	data, err := readFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var b Baseline
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("baseline %s: %w", file, err)
	}
	if b.Definition != definition {
		return nil, fmt.Errorf("baseline %s is of canary %q, not %q", file, b.Definition, definition)
	}
	return &b, nil
}

// WriteBaseline replaces file with b, whole: a reader never sees half.
func WriteBaseline(file string, b *Baseline) error {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".baseline-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
