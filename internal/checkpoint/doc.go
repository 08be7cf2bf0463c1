// Package checkpoint persists the progress of every (source, account) stream
// in a bbolt file: the watermark (end of the last window whose every record
// was acknowledged) and the window in flight. It knows neither the API nor
// the sinks; the pipeline commits a State only after the pages it covers were
// acknowledged, in order.
package checkpoint
