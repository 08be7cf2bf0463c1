// Package archtest holds the import rules of the module (DESIGN.md, "The
// path of a record", and STYLE.md item 1) as one table test over `go list
// -json` of every package: which room may depend on which. It has no code of
// its own; everything is in imports_test.go.
package archtest
