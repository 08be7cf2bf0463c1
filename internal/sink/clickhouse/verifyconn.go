package clickhouse

import (
	"fmt"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink/clickhouse/schema"
)

// OpenReader opens a connection to the servers of cfg, as the sink
// connects, for a reader of what the sink stored (`collector verify`),
// with the names of its database and tables. It writes nothing; the
// caller closes the connection. Errors name the sink's keys.
func OpenReader(cfg Config) (driver.Conn, schema.Options, error) {
	names := schema.Options{Database: cfg.Database, Prefix: cfg.TablePrefix, Cluster: cfg.Cluster}
	if err := cfg.Validate(); err != nil {
		return nil, names, err
	}
	pw, err := secret.Resolve(cfg.Password.Reveal(), cfg.PasswordFile)
	if err != nil {
		return nil, names, fmt.Errorf("sink.clickhouse.password_file: %w", err)
	}
	tlsCfg, err := cfg.TLS.Build()
	if err != nil {
		return nil, names, fmt.Errorf("sink.clickhouse.tls.%w", err)
	}
	conn, err := ch.Open(cfg.options(pw, tlsCfg))
	if err != nil {
		return nil, names, fmt.Errorf("clickhouse: connect: %w", err)
	}
	return conn, names, nil
}
