package ocsf_test

import (
	"testing"

	"github.com/svcexport/collector/internal/ocsf"
)

// BenchmarkAppend maps the simulator's records of each source, one record
// per op, into a reused buffer as a sink would. Target: hundreds of
// thousands of records per CPU-second (run with -cpu 1).
func BenchmarkAppend(b *testing.B) {
	envs := simEnvelopes(b, 1)
	for _, raw := range []bool{false, true} {
		m := ocsf.New(ocsf.Options{RawData: raw})
		for _, source := range ocsf.Sources() {
			name := source
			if raw {
				name += "/raw_data"
			}
			b.Run(name, func(b *testing.B) {
				es := envs[source]
				var buf []byte
				var in, out int64
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					e := &es[i%len(es)]
					var err error
					buf, _, err = m.Append(buf[:0], e)
					if err != nil {
						b.Fatal(err)
					}
					in += int64(len(e.Record))
					out += int64(len(buf))
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
				b.ReportMetric(float64(out)/float64(in), "out/in")
			})
		}
	}
}
