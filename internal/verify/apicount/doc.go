// Package apicount is the API side of `collector verify`: a Counter that
// asks the API for the count of one committed window (verify.OnceCounter),
// with the daemon's own API clients, rate budget (C4), origin rules (C1)
// and page classification (source/pagescan). A core window is counted by
// its first page, whose totalRows is the size of the result set (C3); an
// edge window by its rows (C6). Package verify plans, splits, compares and
// reports; internal/app wires this Counter into it.
//
// It reads the API only: it imports the API client, the catalog of
// sources and the account names of internal/source, and must not import a
// sink, the checkpoint, the pipeline or internal/app (internal/archtest
// holds the rule). Package verify does not import it.
package apicount
