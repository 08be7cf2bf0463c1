package clock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestSleepWaitsOrEndsWithTheContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := Sleep(t.Context(), System{}, time.Minute); err != nil || time.Since(start) != time.Minute {
			t.Fatalf("Sleep(1m) = %v after %v", err, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := Sleep(ctx, System{}, time.Hour); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Minute+time.Second {
			t.Fatalf("Sleep past the context's end = %v after %v", err, time.Since(start))
		}
		if err := Sleep(t.Context(), System{}, -time.Second); err != nil || time.Since(start) != time.Minute+time.Second {
			t.Fatalf("Sleep(-1s) = %v, waited", err)
		}
	})
}
