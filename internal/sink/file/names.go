package file

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// File name parts. A file is named
//
//	SOURCE-ACCOUNT-20261122T153000.123Z-000001.ndjson.part     plain, being written
//	SOURCE-ACCOUNT-20261122T153000.123Z-000001.ndjson          plain, complete
//	SOURCE-ACCOUNT-20261122T153000.123Z-000001.ndjson.gz.part  gzip, being written
//	SOURCE-ACCOUNT-20261122T153000.123Z-000001.ndjson.gz       gzip, complete
//
// in the stream's directory (Config.Path below DIR). The time is when the file was begun (UTC, never
// before the stream's previous file) and the sequence number grows by one
// per file of the stream across restarts, so the names of one stream sort
// in the order they were written.
const (
	stampLayout = "20060102T150405.000Z"
	stampLen    = len(stampLayout)
	seqDigits   = 6
	extPlain    = ".ndjson"
	extGzip     = ".ndjson.gz"
	extPart     = ".part"
)

// filePrefix is the start of every file name of the stream of escaped
// names (ten, src, acct): "SOURCE-ACCOUNT-", or "TENANT-SOURCE-ACCOUNT-"
// for a tenant's stream, so that two tenants' streams never share a file
// or the ledger's entry of one, even in one directory.
func filePrefix(ten, src, acct string) string {
	if ten != "" {
		return ten + "-" + src + "-" + acct + "-"
	}
	return src + "-" + acct + "-"
}

// escapeName makes a source or account name safe as one path component:
// bytes outside [A-Za-z0-9_.-] and a leading dot become %XX, so "../x" or
// "a/b" can never leave DIR/SOURCE/ACCOUNT. Distinct names stay distinct.
func escapeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '-' || (c == '.' && i > 0)
		if ok {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// fileName is the parsed form of one of our file names.
type fileName struct {
	stamp time.Time
	seq   uint64
	gzip  bool
	part  bool
}

// format renders the name for the stream whose escaped names give prefix
// ("SOURCE-ACCOUNT-").
func (n fileName) format(prefix string) string {
	ext := extPlain
	if n.gzip {
		ext = extGzip
	}
	if n.part {
		ext += extPart
	}
	return fmt.Sprintf("%s%s-%0*d%s", prefix, n.stamp.UTC().Format(stampLayout), seqDigits, n.seq, ext)
}

// parseFileName parses name if it is one of ours for the stream of prefix.
// Files of other streams, of other programs and of unknown shape give false.
func parseFileName(prefix, name string) (fileName, bool) {
	var n fileName
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return n, false
	}
	switch {
	case strings.HasSuffix(rest, extGzip+extPart):
		rest, n.gzip, n.part = strings.TrimSuffix(rest, extGzip+extPart), true, true
	case strings.HasSuffix(rest, extGzip):
		rest, n.gzip = strings.TrimSuffix(rest, extGzip), true
	case strings.HasSuffix(rest, extPlain+extPart):
		rest, n.part = strings.TrimSuffix(rest, extPlain+extPart), true
	case strings.HasSuffix(rest, extPlain):
		rest = strings.TrimSuffix(rest, extPlain)
	default:
		return n, false
	}
	// rest is STAMP-SEQ; the account may itself contain '-', but it is in
	// the prefix, so the stamp starts right here.
	if len(rest) < stampLen+2 || rest[stampLen] != '-' {
		return n, false
	}
	t, err := time.Parse(stampLayout, rest[:stampLen])
	if err != nil {
		return n, false
	}
	seq, err := strconv.ParseUint(rest[stampLen+1:], 10, 64)
	if err != nil {
		return n, false
	}
	n.stamp, n.seq = t.UTC(), seq
	return n, true
}

// splitFileName parses name if it has the shape of one of our file names,
// whatever its stream, and returns its prefix ("SOURCE-ACCOUNT-") too.
// Retention and Start use it on every file below DIR.
func splitFileName(name string) (prefix string, n fileName, ok bool) {
	base := name
	for _, ext := range []string{extGzip + extPart, extGzip, extPlain + extPart, extPlain} {
		if b, found := strings.CutSuffix(name, ext); found {
			base = b
			break
		}
	}
	// base is PREFIX STAMP-SEQ: the sequence number is the digits after the
	// last '-', the stamp the stampLen bytes before it.
	dash := strings.LastIndexByte(base, '-')
	if base == name || dash < stampLen {
		return "", n, false
	}
	prefix = base[:dash-stampLen]
	if n, ok = parseFileName(prefix, name); !ok {
		return "", n, false
	}
	return prefix, n, true
}

// less orders file names as they were written.
func (n fileName) less(m fileName) bool {
	if !n.stamp.Equal(m.stamp) {
		return n.stamp.Before(m.stamp)
	}
	return n.seq < m.seq
}

// maxNameLen is the longest name of a file or directory that common file
// systems take (NAME_MAX of ext4, XFS, btrfs, tmpfs).
const maxNameLen = 255

// checkNames fails when the directory or file names of the stream (source,
// account) would be longer than maxNameLen, plain or gzip files as gzip
// says: no retry can make them shorter.
func checkNames(source, account string, gzip bool) error {
	src, acct := escapeName(source), escapeName(account)
	longest := fileName{gzip: gzip, part: true}.format(src + "-" + acct + "-")
	if len(src) > maxNameLen || len(acct) > maxNameLen || len(longest) > maxNameLen {
		return fmt.Errorf("source %q and account %q make file names of %d bytes, longer than the %d a file system takes",
			source, account, len(longest), maxNameLen)
	}
	return nil
}
