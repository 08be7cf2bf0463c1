package source

// Snapshot returns the poller's progress. It is safe to call while Run
// runs.
func (p *Poller) Snapshot() Snapshot {
	s := p.st.Snapshot()
	s.SplitAt = p.splitAt()
	s.RecheckPending = p.rv.Pending()
	s.Backlog = p.planner().Remaining(s.Watermark, p.clk.Now(), s.Density)
	return s
}

// SetDensity seeds the learned density (rows per hour), e.g. from the
// checkpoint after a restart, so the first windows are sized well.
func (p *Poller) SetDensity(d float64) { p.st.SetDensity(d) }
