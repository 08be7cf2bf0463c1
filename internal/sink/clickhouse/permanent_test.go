package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/testinfra/chtest"
)

// TestATableChangedUnderTheSinkIsPermanent: after Start, the table of a
// source is dropped, or a column changes to a type the sink's values do not
// parse as. The server refuses every repeat of those inserts, so the Write
// fails for good; other tables go on.
func TestATableChangedUnderTheSinkIsPermanent(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			srv := chtest.Get(t)
			db := srv.NewDatabase(t)
			cfg := testConfig(srv, proto, db)
			cfg.InsertAttempts = 3
			s, _ := startSink(t, cfg)
			srv.Exec(t, fmt.Sprintf("DROP TABLE %s.dns SYNC", db))
			srv.Exec(t, fmt.Sprintf("ALTER TABLE %s.changed_files MODIFY COLUMN file_path Int64", db))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, source := range []string{"dns", "changed_files"} {
				err := s.Write(ctx, batchOf(source, "acme", generate(t, source, 5, testBase).envs, 0))
				if !sink.IsPermanent(err) {
					t.Errorf("%s: Write = %v, want a permanent error", source, err)
				}
				if err != nil && !strings.Contains(err.Error(), "attempt 1 of 3") {
					t.Errorf("%s: a refused insert was repeated: %v", source, err)
				}
				t.Logf("%s: %v", source, err)
			}
			others := generate(t, "agent_info", 5, testBase).envs
			writeAll(t, s, []*record.Batch{batchOf("agent_info", "acme", others, 0)})
			if got := count(t, srv, db, "agent_info", ""); got != int64(len(others)) {
				t.Errorf("agent_info holds %d rows, want %d: a refused table must not stop the others", got, len(others))
			}
		})
	}
}

// TestOnlyTheWriteWhoseRowsAreRefusedFailsForGood: two Writes share one
// insert; the server refuses a row of one of them (a CHECK constraint), so
// each is inserted alone: the offender fails for good, the other is stored.
func TestOnlyTheWriteWhoseRowsAreRefusedFailsForGood(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	cfg := testConfig(srv, ProtocolNative, db)
	cfg.FlushInterval = time.Second // both Writes join one insert
	s, _ := startSink(t, cfg)
	srv.Exec(t, fmt.Sprintf("ALTER TABLE %s.user_logins ADD CONSTRAINT no_mallory CHECK username != 'mallory'", db))

	good := generate(t, "user_logins", 10, testBase).envs
	ws, we := testBase, testBase.Add(24*time.Hour)
	bad := []record.Envelope{envelope(t, "user_logins", "acme",
		[]byte(`{"createdTime":"2026-09-28T10:00:00.000Z","username":"mallory","mid":1}`), ws, we, we)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var goodErr, badErr error
	wg.Go(func() { goodErr = s.Write(ctx, batchOf("user_logins", "acme", good, 0)) })
	wg.Go(func() { badErr = s.Write(ctx, batchOf("user_logins", "acme", bad, 1)) })
	wg.Wait()
	if goodErr != nil {
		t.Errorf("the Write without the refused row: %v", goodErr)
	}
	var ex *ch.Exception
	if !sink.IsPermanent(badErr) || !errors.As(badErr, &ex) || ex.Code != 469 {
		t.Errorf("the Write of the refused row = %v, want a permanent VIOLATED_CONSTRAINT", badErr)
	}
	if got := count(t, srv, db, "user_logins", ""); got != int64(len(good)) {
		t.Errorf("user_logins holds %d rows, want the %d of the good Write", got, len(good))
	}
	if !testing.Short() && goodErr == nil && badErr != nil && !strings.Contains(badErr.Error(), "insert 1 rows") {
		t.Errorf("the offender was not inserted alone: %v", badErr)
	}
}

// TestServerRefusalsAreClassified takes real errors of the server through
// the driver: a missing grant (this server's one user may not create
// users, as an insert without its grant would be refused) and an unknown
// table are permanent; a login the server refuses may pass (a password
// being rotated) and so is only not repeated at once; a server that does
// not answer is neither.
func TestServerRefusalsAreClassified(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := openConn(t, srv.Native)
	denied := conn.Exec(ctx, "CREATE USER collector_test_denied IDENTIFIED WITH no_password")
	unknown := conn.Exec(ctx, "INSERT INTO system.no_such_table VALUES (1)")
	// Over HTTP: a login refused over the native protocol brings the
	// chdb-based test server down (a fault of that server, not of the
	// protocol); the answer, code 516, is the same.
	// The refused login keeps no connection alive (the driver's Close
	// does not reach connections of a failed handshake).
	noKeepAlive := func(tr *http.Transport) (http.RoundTripper, error) { tr.DisableKeepAlives = true; return tr, nil }
	stranger, err := ch.Open(&ch.Options{Protocol: ch.HTTP, Addr: []string{srv.HTTP}, Auth: ch.Auth{Username: "stranger", Password: "x"},
		DialTimeout: 5 * time.Second, TransportFunc: noKeepAlive})
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	login := stranger.Ping(ctx)
	nobody, err := ch.Open(&ch.Options{Addr: []string{"127.0.0.1:1"}, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer nobody.Close()
	gone := nobody.Ping(ctx)

	for _, tt := range []struct {
		name           string
		err            error
		code           int32
		forGood, login bool
	}{
		{"ACCESS_DENIED", denied, 497, true, false},
		{"UNKNOWN_TABLE", unknown, 60, true, false},
		{"AUTHENTICATION_FAILED", login, 516, false, true},
		{"connection refused", gone, 0, false, false},
	} {
		var ex *ch.Exception
		if tt.code != 0 && (!errors.As(tt.err, &ex) || ex.Code != tt.code) {
			t.Errorf("%s: the server answered %v, want code %d", tt.name, tt.err, tt.code)
			continue
		}
		if tt.err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		if forGood, login := refusal(tt.err); forGood != tt.forGood || login != tt.login {
			t.Errorf("%s (%v): refusal = %v, %v; want %v, %v", tt.name, tt.err, forGood, login, tt.forGood, tt.login)
		}
	}
}
