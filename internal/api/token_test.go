package api

import (
	"testing"
	"time"
)

func TestRenewAfter_C1(t *testing.T) {
	for life, want := range map[time.Duration]time.Duration{
		time.Hour:        48 * time.Minute,
		10 * time.Minute: 5 * time.Minute,
		24 * time.Hour:   24 * time.Hour * 8 / 10,
		time.Minute:      30 * time.Second,
	} {
		if got := renewAfter(life); got != want {
			t.Errorf("renewAfter(%v) = %v, want %v", life, got, want)
		}
	}
}
