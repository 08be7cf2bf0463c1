// Package recheck decides which already fetched windows to ask the API
// again for records that became visible after the window was fetched
// (CONTRACT C3: a record may become visible minutes to hours after its
// time), and how to find the part of a window that grew with few
// requests. It is pure: no I/O, no goroutines, time comes in as an
// argument (Limiter takes a clock function). The poller does the asking.
//
// # What it decides
//
//   - Plan.Due: from a stream's window log (one cursor.LoggedWindow per
//     fetched window: bounds, count when fetched, edge id digest, how long
//     after its end it was last asked, when it is next due) and the plan
//     of the step, the units due now: runs of adjacent due windows merged
//     up to Config.MaxSpan, because counts add up over adjacent windows
//     and one request counts the run. Units come oldest first (see Due).
//   - One schedule (Plan): every ask of a window stores when it is next
//     due, its end plus the first point after the ask of the plan in
//     force then (Plan.Entry, Plan.Asked, Plan.Settle, Plan.Recovered). A
//     plan learnt anew brings a due time earlier, never later, and never
//     marks done a window whose due is still to come (CONTRACT C3: a
//     record may become visible hours after its time); only the settings
//     end a window's points (Config.HorizonOrDefault). A stored entry
//     without a due time (an older version's) gets one from its last ask
//     when it is loaded (Plan.Load).
//   - Unit.Narrow: a state machine for a core unit. It asks for the
//     unit's count (the first page's totalRows is the true size, C3); if
//     the count changed it halves the run of windows, asks for the left
//     half's count and derives the right half's from the parent's, and
//     goes down the halves that changed, down to single logged windows or
//     to a range small enough that fetching it costs no more than counting
//     it (Config.RefetchRows). Its Result says what to fetch again, which
//     log entries to store (with their new counts and asks), what
//     shrank, and how many requests it made.
//   - Unit.CompareEdge: edge windows have no totalRows (C6); a unit is
//     fetched whole (one request) and compared window by window by count
//     and id digest.
//   - Config and Plan: the settings (what sources.*.recheck* configure,
//     Validate) apart from what is learnt at run time. Config.Learnt
//     (recheck: auto) makes the Plan of a step: the dense phase, cadence
//     and sparse points from the delays a stream learnt, pooled with the
//     other streams of its source (Pool), from the first late record on
//     (a prior that fades); Config.Plan is that of fixed points.
//   - Plan.Recover: how far back a caught-up stream's fresh poll
//     re-covers the dense phase, as far as its first page holds, so that
//     records late by less than that come with the next poll at no extra
//     request (Plan.Recovered: the log entries of the windows it re-covered);
//     a sweep counts only what that poll left out.
//   - Config.CountOnly: a count request whose answer is never the first
//     page of a refetch (its range holds more than RefetchRows), which the
//     poller asks with as few fields as the API allows (C3 returns).
//   - Limiter: rechecks spend at most a share of a functionality's budget
//     over its period, so that fresh windows keep theirs.
//   - FollowWindows: the windows in which edge alerts older than the
//     update lookback are re-asked, bounded by the alert marks (follow.go
//     says how and what it costs).
//   - Metrics: the collector_recheck_* series.
//
// # Narrowing: why halves of the logged windows, and what it costs
//
// One state machine narrows, over a prefix-sum function: cells in time
// order with the prefix of their reference counts (a unit's windows with
// their stored counts, or a window's minutes with their delivered counts,
// below). It splits a changed range, counts the left half and derives the
// right half's, and settles a range of one cell, of at most
// Config.RefetchRows rows, or past the cap. The two uses differ only in
// where a range splits and in what a settled range yields.
//
// The log knows the count of each logged window when it was fetched, not
// the counts of its parts. So Narrowing splits only at the boundaries of
// logged windows, whose old counts add up: for a run of n windows with
// g of them grown, it makes at most 1 + g*ceil(log2 n) count requests
// (one per level on each path to a grown window; the right half's count
// is derived), and then fetches each grown window once. At the last
// recheck point both halves are counted (at most 1 + 2*g*ceil(log2 n)):
// a record that arrives in the left half between the parent's count and
// the left's would make the derived right count too small and hide a
// growth there; earlier points catch that at the next point, because a
// stored count never exceeds what was delivered, but the last one has no
// next point. A range of at most Config.RefetchRows (two pages, 10,000
// rows) is fetched whole instead of narrowed: that costs at most two
// requests, narrowing it at least one count and one page; and when the
// range was itself just counted, the count's first page is the first page
// of the refetch (Refetch.Counted). Past Config.MaxRequests the ranges still changed are
// fetched whole: the cap bounds counting, never what is recovered.
//
// # Below a window: WindowNarrowing
//
// A single grown window larger than Config.RefetchRows is narrowed further
// by the same machine with the stream's delivered set (what it delivered
// in each minute of record time, which the checkpoint keeps for as long as
// the window may be asked again): a part is grown when the server counts
// more than was delivered in it. It splits where the delivered records
// divide in two (records are rarely spread evenly over a window's time),
// derives the right half's count as above (both counted at the last
// point), and goes down to a minute or to a part of at most
// Config.RefetchRows. A part that counts fewer than was delivered is a
// doubt (a deletion may hide a growth) and is split and fetched like a
// grown one. The window's entry takes the sum of its parts' counts, which
// never exceeds what was delivered, and only once every part was fetched.
//
// What the recheck code needs from outside reaches it through interfaces
// it owns: the narrowing reads the delivered set's per-minute counts
// through Counts (the checkpoint satisfies it; the app hands it to the
// source at build), and the delays are learnt through Observer, which the
// pipeline's once filter tells what each page added (fresh records, and
// the late records a recheck recovered), so that nothing reads back up
// through the pipeline.
//
// It reads the window log as package cursor's values (cursor.LoggedWindow),
// which the checkpoint stores and the poller keeps, and imports no
// internal package but cursor, record and window; the poller, the
// pipeline and the CLI wire it in. It must not import the API client, the
// sources, the sinks, the checkpoint or the pipeline.
package recheck
