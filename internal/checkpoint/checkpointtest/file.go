package checkpointtest

import (
	"context"
	"testing"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/record"
)

// ReadFile returns every stream's state from the checkpoint file at path,
// which no running collector may hold (end-to-end tests and benchmarks read
// what a stopped collector committed).
func ReadFile(tb testing.TB, path string) map[record.Stream]checkpoint.State {
	tb.Helper()
	db, err := checkpoint.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	all, err := db.All(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return all
}
