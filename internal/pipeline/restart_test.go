package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source"
)

// onePage emits one page whose cursor is after, once, and reports the
// cursor it was started from.
type onePage struct {
	key     record.Stream
	after   *cursor.Cursor // nil: emit nothing
	started chan cursor.Cursor
}

func (o *onePage) Stream() record.Stream { return o.key }

func (*onePage) Learner() recheck.Observer { return nil }

func (o *onePage) Run(ctx context.Context, from cursor.Cursor, out source.Output) error {
	if o.started != nil {
		o.started <- from
	}
	if o.after == nil {
		return nil
	}
	return out.Emit(ctx, cursor.Page{Batch: record.Batch{Source: o.key.Source, Account: o.key.Account,
		WindowStart: t0, WindowEnd: t0.Add(time.Hour)}, After: *o.after, FetchedAt: t0})
}

// everyField sets every field of v, recursively, to a value of its own
// that is not the zero value: times after t0, counts, durations and
// floats that differ from field to field. A field of a kind it does not
// know fails t, so that a field added to the cursor later is set too.
func everyField(t *testing.T, v reflect.Value, path string, n *int) {
	t.Helper()
	*n++
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(t0.Add(time.Duration(*n) * time.Hour).Add(time.Duration(*n) * time.Millisecond)))
		return
	case v.Type() == reflect.TypeFor[time.Duration]():
		v.SetInt(int64(time.Duration(*n)*time.Second + time.Duration(*n)))
		return
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(*n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.25)
	case reflect.String:
		v.SetString(fmt.Sprintf("https://api.example/next/%d", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		everyField(t, v.Elem(), path, n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			everyField(t, v.Index(i), fmt.Sprintf("%s[%d]", path, i), n)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				t.Fatalf("%s.%s: unexported field: teach everyField how to set it", path, f.Name)
			}
			everyField(t, v.Field(i), path+"."+f.Name, n)
		}
	default:
		t.Fatalf("%s: a %s: teach everyField how to set it", path, v.Type())
	}
}

// Every value a stream's cursor holds survives a restart: the page's
// cursor, with every field set (by reflection, so that a field added to
// cursor.Cursor, window.Limits, cursor.Chain or cursor.Delays later is
// set too), goes through the tracker, the commit to a real bbolt file, a
// close and a reopen, and is the cursor the next run starts from. Before
// the checkpoint held the cursor whole, the learnt paging limits were
// dropped (issue 29: a restart cut every stream's chains again to learn
// the server's chain cap).
func TestEveryValueOfTheCursorSurvivesARestart(t *testing.T) {
	t.Parallel()
	var want cursor.Cursor
	n := 0
	v := reflect.ValueOf(&want).Elem()
	for i := range v.NumField() {
		switch f := v.Type().Field(i); f.Name {
		case "Log", "Alerts":
			// The window log and alert marks travel as LogChanges, with
			// tests of their own; a page's cursor leaves them nil.
		default:
			everyField(t, v.Field(i), "Cursor."+f.Name, &n)
		}
	}
	key := record.Stream{Source: "dns", Account: "acme"}
	path := filepath.Join(t.TempDir(), "cp.db")
	run := func(p Producer) {
		t.Helper()
		db, err := checkpoint.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		pl := New(testConfig(), db, one(&testSink{}), []Producer{p}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		if err := pl.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	run(&onePage{key: key, after: &want})
	started := make(chan cursor.Cursor, 1)
	run(&onePage{key: key, started: started})
	got := <-started
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the cursor after a restart differs from the one committed:\n got %+v\nwant %+v\n limits %+v, want %+v", got, want, got.Limits, want.Limits)
	}
}
