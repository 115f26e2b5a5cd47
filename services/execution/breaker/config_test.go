package breaker_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/services/execution/breaker"
)

func TestConfigWithDefaults(t *testing.T) {
	defaults := breaker.Config{
		Window:         breaker.DefaultWindow,
		MinRequests:    breaker.DefaultMinRequests,
		FailureRate:    breaker.DefaultFailureRate,
		CoolDown:       breaker.DefaultCoolDown,
		HalfOpenProbes: breaker.DefaultHalfOpenProbes,
	}
	custom := breaker.Config{Window: time.Minute, MinRequests: 20, FailureRate: 0.9, CoolDown: time.Second, HalfOpenProbes: 3}
	tests := []struct {
		name string
		in   breaker.Config
		want breaker.Config
	}{
		{name: "zero", in: breaker.Config{}, want: defaults},
		{name: "set fields kept", in: custom, want: custom},
		{name: "mixed", in: breaker.Config{MinRequests: 2}, want: func() breaker.Config { c := defaults; c.MinRequests = 2; return c }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.WithDefaults(); got != tt.want {
				t.Errorf("WithDefaults() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name      string
		cfg       breaker.Config
		wantField string // "" for valid
	}{
		{name: "zero is valid", cfg: breaker.Config{}},
		{name: "all set", cfg: breaker.Config{Window: time.Minute, MinRequests: 1, FailureRate: 1, CoolDown: time.Second, HalfOpenProbes: 5}},
		{name: "negative window", cfg: breaker.Config{Window: -time.Second}, wantField: "Window"},
		{name: "tiny window", cfg: breaker.Config{Window: 5}, wantField: "Window"},
		{name: "negative min requests", cfg: breaker.Config{MinRequests: -1}, wantField: "MinRequests"},
		{name: "negative rate", cfg: breaker.Config{FailureRate: -0.1}, wantField: "FailureRate"},
		{name: "rate above one", cfg: breaker.Config{FailureRate: 1.01}, wantField: "FailureRate"},
		{name: "rate NaN", cfg: breaker.Config{FailureRate: math.NaN()}, wantField: "FailureRate"},
		{name: "negative cool-down", cfg: breaker.Config{CoolDown: -1}, wantField: "CoolDown"},
		{name: "negative probes", cfg: breaker.Config{HalfOpenProbes: -2}, wantField: "HalfOpenProbes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.wantField == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.wantField != "" && (err == nil || !strings.Contains(err.Error(), tt.wantField)):
				t.Errorf("Validate() = %v, want an error naming %s", err, tt.wantField)
			}
		})
	}
}

func TestNewPanicsOnBadConfig(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Error("New with a negative CoolDown did not panic")
		}
	}()
	breaker.New(breaker.Config{CoolDown: -time.Second})
}
