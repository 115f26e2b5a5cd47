package breaker_test

import (
	"testing"
	"time"

	"github.com/steward-run/steward/services/execution/breaker"
)

// TestTuneGivesOneKeyItsOwnThresholds: a key tuned to open after two
// failures and cool down for an hour does; another key keeps the Set's
// five; a tuning that does not validate changes nothing; a zero one gives
// the key back the Set's. (A breaker already open keeps the cool-down it
// opened with.)
func TestTuneGivesOneKeyItsOwnThresholds(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := breaker.New(breaker.Config{})
	if err := s.Tune("fragile", breaker.Config{MinRequests: 2, FailureRate: 1, CoolDown: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := s.Tune("fragile", breaker.Config{FailureRate: 2}); err == nil {
		t.Error("a failure rate of 2 was taken")
	}
	for _, key := range []string{"fragile", "sturdy"} {
		s.Record(key, breaker.Failure, now)
		s.Record(key, breaker.Failure, now)
	}
	if st, until := s.State("fragile", now); st != breaker.Open || until != now.Add(time.Hour) {
		t.Errorf("fragile after two failures: %v until %v; want open for the hour", st, until)
	}
	if st, _ := s.State("sturdy", now); st != breaker.Closed {
		t.Errorf("sturdy after two failures: %v; want closed until five", st)
	}
	if err := s.Tune("mended", breaker.Config{MinRequests: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.Tune("mended", breaker.Config{}); err != nil {
		t.Fatal(err)
	}
	s.Record("mended", breaker.Failure, now)
	s.Record("mended", breaker.Failure, now)
	if st, _ := s.State("mended", now); st != breaker.Closed {
		t.Errorf("mended, given back the Set's thresholds, after two failures: %v; want closed", st)
	}
}
