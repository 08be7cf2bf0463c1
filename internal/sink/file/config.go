package file

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/ocsfenc"
)

// Defaults of Config.
const (
	DefaultDir      = "./out"
	DefaultMaxBytes = 256 << 20 // 256 MiB
	DefaultFileMode = os.FileMode(0o640)
	DefaultMaxAge   = time.Hour
)

// Values of Config.Format.
const (
	// FormatEnvelope writes each record as its C7 envelope.
	FormatEnvelope = "envelope"
	// FormatOCSF writes each record as an OCSF 1.3.0 event (package ocsf,
	// docs/ocsf.md).
	FormatOCSF = "ocsf"
)

// Values of Config.PathTime.
const (
	// PathTimeFetched places a batch by the time its page was fetched.
	PathTimeFetched = "fetched"
	// PathTimeRecord places each record by its own time.
	PathTimeRecord = "record"
)

// Config is the configuration of the file sink (keys under sink.file).
// Build it with DefaultConfig and override; the zero value is not valid.
type Config struct {
	// Dir is the root directory; files go to DIR/SOURCE/ACCOUNT/.
	// Default "./out", resolved to an absolute path by New.
	Dir string `koanf:"dir"`
	// Path is where below Dir a stream's files go: '/'-separated
	// components, {source} and {account} each a whole component (escaped
	// names), and the UTC time the batch's page was fetched as {yyyy},
	// {mm}, {dd}, {hh}, alone or inside a component
	// ("{source}/{account}/{yyyy}/{mm}/{dd}", "{source}/{account}/dt={yyyy}-{mm}-{dd}").
	// A file is closed when the next batch goes to another directory.
	// Default "{source}/{account}"; with tenants (docs/tenants.md)
	// "{tenant}/{source}/{account}", and a path must hold {tenant}.
	Path string `koanf:"path"`
	// PathTime is the time Path's {yyyy} {mm} {dd} {hh} take: "fetched"
	// (PathTimeFetched, the default), when the batch's page was fetched,
	// so a batch is never split; or "record" (PathTimeRecord), each
	// record's own time (the envelope's time, C7), as Vector's file sink
	// partitions by the event's timestamp: a batch whose records span
	// several hours or days goes to several files, one per directory.
	PathTime string `koanf:"path_time"`
	// Retention bounds what stays on disk (keys under sink.file.retention);
	// off by default.
	Retention RetentionConfig `koanf:"retention"`
	// MaxBytes is the size at which a file is closed and a new one begun:
	// a batch that would take the current file past MaxBytes goes to a new
	// file, so files stay at or under MaxBytes unless one batch alone is
	// larger (a batch is never split across files). With Gzip it counts
	// compressed bytes on disk. Default 256 MiB.
	MaxBytes int64 `koanf:"max_bytes"`
	// MaxAge closes a file that has been open this long, at its stream's
	// next write or, when the stream is quiet, within a minute, so that a
	// quiet stream's gzip file is finished (renamed from .part) and a
	// plain one handed to retention tools in bounded time. 0 turns it off:
	// files are then closed only by size and at Shutdown. Default 1h.
	MaxAge time.Duration `koanf:"max_age"`
	// Gzip writes NDJSON.gz: every batch is one complete gzip member. A
	// file, plain or gzip, is named *.part until it is complete. Default
	// false.
	Gzip bool `koanf:"gzip"`
	// FileMode is the permission of new files (octal in YAML and the
	// environment: 0640). It must let the owner read and write and have no
	// bits outside 0777. Directories are created 0750. Default 0640.
	FileMode os.FileMode `koanf:"file_mode"`
	// Fsync makes Write return nil only after the file (and, for a new file,
	// its directory) is fsynced. Default true.
	//
	// DANGER: with Fsync false an acknowledged batch sits in the page cache
	// only; a power loss or kernel crash loses it although the checkpoint
	// has moved past it, and may leave torn or zero-filled tails in any
	// file. Only benchmarks and tests that say so turn it off.
	Fsync bool `koanf:"fsync"`
	// Format is what a line holds: "envelope" (the C7 envelope JSON,
	// default) or "ocsf" (one OCSF 1.3.0 event per record, its
	// metadata.uid the record id; docs/ocsf.md). Default "envelope".
	Format string `koanf:"format"`
	// OCSF shapes the events of format "ocsf" (keys under sink.file.ocsf).
	OCSF ocsfenc.Config `koanf:"ocsf"`
	// Delivery is "exactly_once" (default): after a crash the files hold
	// exactly what the checkpoint covers (a restart cuts what lies past
	// it, which is fetched again), so no line comes twice; or
	// "at_least_once": what a crash left past the checkpoint stays and
	// comes again (the same C7 ids).
	Delivery string `koanf:"delivery"`
}

// DefaultConfig returns the defaults: Dir "./out", Path
// "{source}/{account}" by fetch time, no retention, MaxBytes 256 MiB, MaxAge 1h, Gzip off, FileMode 0640, Fsync on, Format "envelope" and the
// defaults of the ocsf block.
func DefaultConfig() Config {
	return Config{
		Dir:      DefaultDir,
		Path:     DefaultPath,
		PathTime: PathTimeFetched,
		MaxBytes: DefaultMaxBytes,
		MaxAge:   DefaultMaxAge,
		FileMode: DefaultFileMode,
		Fsync:    true,
		Format:   FormatEnvelope,
		OCSF:     ocsfenc.DefaultConfig(),
		Delivery: sink.DeliveryExactlyOnce,
	}
}

// Validate reports every invalid key, naming it (sink.file.max_bytes: must
// be > 0), joined with errors.Join; nil when c is usable.
func (c Config) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("sink.file.dir: must not be empty"))
	}
	if _, err := parseLayout(c.Path); err != nil {
		errs = append(errs, fmt.Errorf("sink.file.path: %w", err))
	}
	switch c.PathTime {
	case "", PathTimeFetched, PathTimeRecord: // "": fetched
	default:
		errs = append(errs, fmt.Errorf("sink.file.path_time: unknown time %q (%s, %s)", c.PathTime, PathTimeFetched, PathTimeRecord))
	}
	errs = append(errs, c.Retention.validate("sink.file.retention"))
	if c.MaxBytes <= 0 {
		errs = append(errs, fmt.Errorf("sink.file.max_bytes: must be > 0, got %d", c.MaxBytes))
	}
	if c.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("sink.file.max_age: must be >= 0 (0: no limit), got %s", c.MaxAge))
	}
	switch {
	case c.FileMode&^os.ModePerm != 0:
		errs = append(errs, fmt.Errorf("sink.file.file_mode: %#o has bits outside 0777 (write it in octal, e.g. 0640)", uint32(c.FileMode)))
	case c.FileMode&0o600 != 0o600:
		errs = append(errs, fmt.Errorf("sink.file.file_mode: %#o must let the owner read and write (0600)", uint32(c.FileMode)))
	}
	switch c.Format {
	case FormatEnvelope, FormatOCSF:
	default:
		errs = append(errs, fmt.Errorf("sink.file.format: unknown format %q (%s, %s)", c.Format, FormatEnvelope, FormatOCSF))
	}
	errs = append(errs, c.OCSF.Validate("sink.file.ocsf"))
	switch c.Delivery {
	case sink.DeliveryExactlyOnce, sink.DeliveryAtLeastOnce:
	default:
		errs = append(errs, fmt.Errorf("sink.file.delivery: unknown mode %q (%s, %s)", c.Delivery, sink.DeliveryExactlyOnce, sink.DeliveryAtLeastOnce))
	}
	return errors.Join(errs...)
}
