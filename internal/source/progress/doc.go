// Package progress holds where a poller's stream stands and what moves
// it: the Cursor (the watermark and the Chain in flight, which the
// checkpoint stores), the Pages a poller hands on with the cursor that
// holds once each is delivered, the Output they go to (EmitFunc for
// consumers without a bound), and the poller's progress as others read
// it (Snapshot, kept by a State that is safe for concurrent use).
//
// It holds values and their bookkeeping only: it makes no request, plans
// no window and knows no pipeline, sink or checkpoint. Package source
// aliases its types (source.Cursor, source.Page, source.Snapshot...) and
// is the only writer of a State.
package progress
