package kafka

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run when a test leaves franz-go or kfake goroutines
// behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
