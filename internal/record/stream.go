package record

// Stream names one stream of the collector: a source read for an account
// (CONTRACT C2, C7). Every stage keys its state by it: a poller pulls one
// stream, the pipeline orders and acknowledges each stream's pages, the
// checkpoint stores one state per stream and the sinks write per stream.
//
// The zero Stream names nothing. Account is the envelope account: a
// sub-account, "org" for organization-level data or "default" for the
// token's own account. A Stream is comparable and may be a map key.
type Stream struct {
	Source, Account string
}

// String returns "source/account", the form of logs and errors.
func (s Stream) String() string { return s.Source + "/" + s.Account }
