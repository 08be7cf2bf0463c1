package cursor

import (
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/window"
)

// Chain is a window whose next-page chain is being walked (CONTRACT C3). It
// is what the checkpoint stores as the window in flight, so that after a
// restart the walk continues from NextURL while the URL is still valid.
type Chain struct {
	// Window is the window being walked.
	Window window.Window
	// NextURL is the next page to fetch; empty when the next step is the
	// window's first page (a window that could not be finished as asked
	// is asked again from its first page, in parts, C3).
	NextURL string
	// Started is when the chain's first page was served; next-page URLs
	// expire a fixed time after it (24 h by default).
	Started time.Time
	// Pages and Rows count what was delivered of the chain so far.
	Pages int
	Rows  int64
	// Total is the first page's totalRows, 0 when unknown: a chain that
	// ends with fewer rows was cut by the server (C3), also after a
	// restart resumed it.
	Total int64
}

// Cursor is where a stream stands: everything before Watermark is delivered;
// InFlight, if not nil, is the chain that was walked last. The checkpoint
// stores it whole as a stream's state (all but Log and Alerts, which are
// logs of their own), so that what a stream learnt survives a restart.
type Cursor struct {
	Watermark time.Time
	InFlight  *Chain
	// Start is where the stream began collecting: its configured start
	// as resolved at its first run (sources.*.start may be relative to
	// it); zero when unknown (a checkpoint of a collector that did not
	// keep it). Verify counts from it.
	Start time.Time
	// Density is the observed rows per hour of the stream, so that window
	// sizing survives a restart; 0 when unknown.
	Density float64
	// Limits are the server's paging limits the stream learnt (C3), so
	// that they can survive a restart; the zero Limits knows nothing. A
	// poller takes those it has not learnt itself.
	Limits window.Limits
	// Delays are the platform's delays the stream learnt from its
	// rechecks, so that a restart keeps them (recheck: auto).
	Delays Delays
	// Inventory is the stream's last inventory snapshot (agent_info read
	// as an inventory); the zero Inventory for every other stream.
	Inventory Inventory
	// Log and Alerts are the stream's window log and alert marks as last
	// committed; a poller reads them once at its start (a Page's After
	// leaves them nil).
	Log    []LoggedWindow
	Alerts map[string]AlertMark
}

// Clone returns a copy of c that shares no memory with it.
func (c Cursor) Clone() Cursor {
	if c.InFlight != nil {
		ch := *c.InFlight
		c.InFlight = &ch
	}
	c.Delays = c.Delays.Clone()
	c.Inventory = c.Inventory.Clone()
	c.Log = slices.Clone(c.Log)
	c.Alerts = maps.Clone(c.Alerts)
	return c
}

// Page is one page of a result set (or a bounded part of one) as the
// poller hands it on: its records, already the Batch the sinks write, with
// the cursor that holds once the page and every earlier page of the stream
// are delivered (STYLE item 4: the checkpoint update travels with the
// records).
type Page struct {
	// Batch is what the sinks write: the stream, window and index of the
	// page and its envelopes (empty for an empty window). Its Seq is the
	// pipeline's to assign.
	Batch record.Batch
	// After is the cursor once this page is delivered. When the page is the
	// last of its window, After.Watermark is the window's end and
	// After.InFlight is nil.
	After Cursor
	// Revisit marks pages of a re-asked period (rechecks, edge alert
	// updates): they carry records but do not move the cursor.
	Revisit bool
	// Asked is why the page's records were fetched: the once filter
	// counts what it leaves out by it and tells the stream's learner
	// what the page added (recheck.Observer). A chunk of a page too large
	// for one batch is a Revisit page asked as its page was.
	Asked Asked
	// FetchedAt is when the page arrived.
	FetchedAt time.Time
	// Log, when not nil, changes the window log and alert marks once
	// the page is delivered.
	Log *LogChanges
	// Delivered are the keys of the page's records that join the
	// stream's delivered set once the page is committed (with its
	// cursor), so that asking the period again does not deliver them
	// twice. The pipeline's once filter sets them (a producer leaves
	// them nil); nil when the stream keeps no delivered set.
	Delivered []Delivered
}

// Asked is why a page's records were fetched.
type Asked uint8

const (
	// AskedForward: on the stream's forward path. A split, a resume or
	// an expired next-page chain may ask some records again: the once
	// filter leaves those out as refetched.
	AskedForward Asked = iota
	// AskedLate: a recheck asked a period again for records that became
	// visible late (C3), or a fresh poll re-covered the late phase below
	// the watermark (the records of its window before the watermark go
	// out as a Revisit page of their own); the stream learns the
	// platform's delays from those the once filter keeps.
	AskedLate
	// AskedAgain: a period asked again for other reasons (edge alert
	// updates, a recheck of an edge alert stream): nothing to learn.
	AskedAgain
	// AskedInventory: a walk of the current agents (agent_info's
	// inventory). Its snapshots are kept once by the walk's digests
	// (Cursor.Inventory), not by the delivered set: the once filter
	// passes them all and keeps no key of them, so that they neither
	// raise the per-minute counts a recheck compares with the server's
	// (a late record in the walk's minute would look delivered) nor
	// teach the stream a delay.
	AskedInventory
)

// Stream is the stream the page belongs to.
func (p Page) Stream() record.Stream {
	return p.Batch.Stream()
}

// Window is the window the page belongs to.
func (p Page) Window() window.Window {
	return window.Window{Start: p.Batch.WindowStart, End: p.Batch.WindowEnd}
}

// Index is the page's position in its chain, from 0.
func (p Page) Index() int { return p.Batch.Page }

// LoggedWindow is one entry of a stream's window log: a window whose every
// page was acknowledged, with what it held when it was fetched, so that it
// can be asked again later for records that arrived late (CONTRACT C3: a
// record may become visible hours after its time). Package recheck decides
// from these entries when to ask again; the checkpoint stores them.
type LoggedWindow struct {
	// Start and End bound the half-open window [Start, End) (C3). Start
	// is the entry's key: a stream has one entry per start.
	Start, End time.Time
	// Count is the size of the window's result set as last fetched: the
	// first page's totalRows for a core window (C3), the rows delivered
	// for an edge window (C6, no totalRows). It never exceeds what was
	// delivered for the window, which is what lets a later recheck see
	// any record still missing.
	Count int64
	// Digest is the hex XOR of the C7 ids delivered for an edge window
	// (record.Digest.Hex); "" for a core window.
	Digest string
	// FetchedAt is when the window's first page arrived.
	FetchedAt time.Time
	// Passed is how long after End the window was last asked: fetched
	// (FetchedAt minus End) or counted again by a recheck. Every recheck
	// point at or before it is passed.
	Passed time.Duration
	// Due is when the window is next asked: End plus the first point
	// after Passed of the schedule in force when it was last asked
	// (recheck.Plan). Zero: that schedule had no point left; or the entry
	// was stored by a version that kept no due time, and then the
	// schedule in force when it is loaded gives it one from Passed. A
	// schedule learnt anew later may bring it earlier, never later
	// (CONTRACT C3: a window promised a point is asked by then).
	Due time.Time
}

// Checked is when w was last asked: End plus Passed.
func (w LoggedWindow) Checked() time.Time { return w.End.Add(w.Passed) }

// Edge reports whether w is an edge window (it has an id digest).
func (w LoggedWindow) Edge() bool { return w.Digest != "" }

// AlertMark is what a stream of edge alerts remembers of one alert (C6:
// an alert changes after creation, and a collector that promises updates
// emits it again when its update_time grew): the greatest update_time
// emitted and its create_time, which says when the mark may be forgotten.
// Both are kept to the millisecond, the precision of edge timestamps (C6).
type AlertMark struct {
	Update, Create time.Time
}

// LogChanges are the changes to a stream's window log and alert marks
// that hold once the page carrying them, and every earlier page of the
// stream, is delivered: the pipeline commits them in the same transaction
// as the cursor, so that the log never says a window was fetched, or an
// alert emitted, before it was. A nil *LogChanges changes nothing.
type LogChanges struct {
	Windows WindowChanges
	Alerts  AlertChanges
}

// Empty reports whether c changes nothing.
func (c *LogChanges) Empty() bool {
	return c == nil || c.Windows.Empty() && c.Alerts.Empty()
}

// Merge folds later, a change that comes after c, into c (see
// WindowChanges.Merge and AlertChanges.Merge).
func (c *LogChanges) Merge(later LogChanges) {
	c.Windows.Merge(later.Windows)
	c.Alerts.Merge(later.Alerts)
}

// WindowChanges are the changes to one stream's window log: first Delete,
// then Put, then PruneBefore, then the store's bound on entries. The zero
// value changes nothing.
type WindowChanges struct {
	// Delete removes the entries with these starts (a missing one is no
	// error): the entries a merged entry of Put replaces.
	Delete []time.Time
	// Put inserts each entry, or replaces the entry with the same Start.
	Put []LoggedWindow
	// PruneBefore, when not zero, removes every entry whose End is at or
	// before it: the log is bounded to a horizon.
	PruneBefore time.Time
}

// Merge folds later, a change that comes after c, into c, so that
// applying c once has the effect of applying both in order; only a
// PruneBefore is taken as the later of the two and applies to every entry,
// which differs only for an entry put by later that ends before c's
// prune: no such entry is worth keeping. The pipeline merges the changes of
// the pages it commits together.
func (c *WindowChanges) Merge(later WindowChanges) {
	for _, d := range later.Delete {
		c.Put = slices.DeleteFunc(c.Put, func(w LoggedWindow) bool { return w.Start.Equal(d) })
		c.Delete = append(c.Delete, d)
	}
	for _, w := range later.Put {
		c.Put = slices.DeleteFunc(c.Put, func(p LoggedWindow) bool { return p.Start.Equal(w.Start) })
		c.Put = append(c.Put, w)
	}
	if later.PruneBefore.After(c.PruneBefore) {
		c.PruneBefore = later.PruneBefore
	}
}

// Empty reports whether c changes nothing.
func (c WindowChanges) Empty() bool {
	return len(c.Delete) == 0 && len(c.Put) == 0 && c.PruneBefore.IsZero()
}

// AlertChanges are the changes to one stream's alert marks: first Put,
// then PruneCreatedBefore, then the store's bound on marks. The zero value
// changes nothing.
type AlertChanges struct {
	// Put sets the mark of each alert uuid (a non-empty string).
	Put map[string]AlertMark
	// PruneCreatedBefore, when not zero, forgets every alert created
	// before it: the period re-asked for updates has moved past it.
	PruneCreatedBefore time.Time
}

// Merge folds later, a change that comes after c, into c: later marks win
// and the later prune applies.
func (c *AlertChanges) Merge(later AlertChanges) {
	if len(later.Put) > 0 {
		if c.Put == nil {
			c.Put = make(map[string]AlertMark, len(later.Put))
		}
		maps.Copy(c.Put, later.Put)
	}
	if later.PruneCreatedBefore.After(c.PruneCreatedBefore) {
		c.PruneCreatedBefore = later.PruneCreatedBefore
	}
}

// Empty reports whether c changes nothing.
func (c AlertChanges) Empty() bool { return len(c.Put) == 0 && c.PruneCreatedBefore.IsZero() }

// Delivered is what a stream remembers of one record it delivered, so that
// whatever asks a period again (a recheck that found growth, a chain
// restarted after its next-page URL expired, a window asked again in
// parts, a resume after a restart) delivers only the records not delivered
// before: 64 bits of the record's C7 id and its record time to the
// millisecond. Two records are taken for one only when both agree, and a
// page holding more records of one key than were delivered delivers all
// of them (a copy, never a loss).
type Delivered struct {
	// Hash is the first 64 bits of the record id (a SHA-256 in hex, C7),
	// or an FNV-1a hash of an id of another form.
	Hash uint64
	// Time is the record time, Unix milliseconds.
	Time int64
}

// DeliveredOf returns the key of a record of id and time t.
func DeliveredOf(id string, t time.Time) Delivered {
	return Delivered{Hash: idHash(id), Time: t.UnixMilli()}
}

// idHash is the first 16 hex digits of id as a number when id is hex, an
// FNV-1a hash of id otherwise.
func idHash(id string) uint64 {
	if len(id) >= 16 {
		if v, err := strconv.ParseUint(id[:16], 16, 64); err == nil {
			return v
		}
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}
