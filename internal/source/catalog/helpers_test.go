package catalog

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func fmtAll(v any) string { return fmt.Sprintf("%v %+v %#v", v, v, v) }
