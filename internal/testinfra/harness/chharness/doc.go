// Package chharness extends the harness to the ClickHouse sink: the sink's
// configuration, reading the tables back and comparing them with the
// simulator's ground truth and with the raw records row by row, and a
// proxy that cuts connections after an insert's data went through. The
// server comes from internal/testinfra/chtest. Like the harness it is
// imported by _test.go files only.
package chharness
