package coremap

import (
	"github.com/svcexport/collector/internal/ocsf/ocsfbase"
	"github.com/svcexport/collector/internal/ocsf/ocsfjson"
	"github.com/svcexport/collector/internal/ocsf/ocsfrec"
)

// changed_files: File System Activity.
const (
	cfStartTime = iota
	cfEndTime
	cfMid
	cfFilePath
	cfHash
	cfMtime
	cfSize
	cfThreatInfo
)

func changedFileHead(r *ocsfrec.Record, h *ocsfbase.Head) {
	h.Activity = 3 // Update: the platform reports files whose content changed
	v := r.Field(cfThreatInfo)
	if ocsfjson.IsNull(v) {
		return
	}
	// threatTags and threatSource have no attribute in this class: the
	// member stays unmapped; its severity becomes the event's.
	var vals [1][]byte
	if _, ok := r.Lookup(v, []string{"threatSeverity"}, vals[:]); !ok {
		r.Fallback(cfThreatInfo)
		return
	}
	tok, ok := r.StrIn(cfThreatInfo, vals[0])
	if !ok {
		return
	}
	switch {
	case r.EqualFold(tok, "INFO"), r.EqualFold(tok, "INFORMATIONAL"):
		h.Severity = ocsfbase.SeverityInformational
	case r.EqualFold(tok, "LOW"):
		h.Severity = ocsfbase.SeverityLow
	case r.EqualFold(tok, "MEDIUM"):
		h.Severity = ocsfbase.SeverityMedium
	case r.EqualFold(tok, "HIGH"):
		h.Severity = ocsfbase.SeverityHigh
	case r.EqualFold(tok, "CRITICAL"):
		h.Severity = ocsfbase.SeverityCritical
	default:
		h.Severity, h.SeverityName = ocsfbase.SeverityOther, tok
	}
}

func changedFileBody(w *ocsfjson.Writer, r *ocsfrec.Record) {
	startEnd(w, r, cfStartTime, cfEndTime)
	// OCSF requires the actor; the platform does not say who changed the file.
	placeholderObject(w, "actor", "app_name")
	mid := r.ID(cfMid)
	device(w, mid) // required
	if mid.OK {
		r.Mapped(cfMid)
	}

	w.Open("file")
	if tok, ok := r.Str(cfFilePath); ok {
		p := r.Text(tok)
		name, parent := splitPath(p)
		if len(name) == 0 {
			name = p
		}
		if len(name) == 0 {
			w.Str("name", ocsfbase.Placeholder)
		} else {
			w.StrBytes("name", name)
		}
		w.Token("path", tok)
		if parent != nil {
			w.StrBytes("parent_folder", parent)
		}
		if ext := extension(name); ext != nil {
			w.StrBytes("ext", ext)
		}
		r.Mapped(cfFilePath)
	} else {
		w.Str("name", ocsfbase.Placeholder)
	}
	w.Int("type_id", 1)
	w.Str("type", "Regular File")
	if tok, ok := r.Str(cfHash); ok {
		if alg, name := hashAlgorithm(r.Text(tok)); alg >= 0 {
			w.OpenArray("hashes")
			w.Open("")
			w.Int("algorithm_id", int64(alg))
			w.Str("algorithm", name)
			w.Token("value", tok)
			w.Close()
			w.CloseArray()
			r.Mapped(cfHash)
		} else {
			r.Fallback(cfHash)
		}
	}
	if ms, ok := r.Time(cfMtime); ok {
		w.Int("modified_time", ms)
		r.Mapped(cfMtime)
	}
	if n, ok := r.Integer(cfSize); ok {
		w.Int("size", n)
		r.Mapped(cfSize)
	}
	w.Close()
}

// splitPath splits a POSIX or Windows path into its last element and the
// folder holding it (nil when there is none).
func splitPath(p []byte) (name, parent []byte) {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' || p[i] == '\\' {
			if i == 0 {
				return p[1:], p[:1]
			}
			return p[i+1:], p[:i]
		}
	}
	return p, nil
}

// extension returns what follows the last dot of a file name, without the
// dot, or nil.
func extension(name []byte) []byte {
	for i := len(name) - 1; i > 0; i-- {
		if name[i] == '.' {
			if i == len(name)-1 {
				return nil
			}
			return name[i+1:]
		}
	}
	return nil
}

// hashAlgorithm names a hex digest by its length (fingerprint
// algorithm_id); -1 when the value does not fit file_hash_t.
func hashAlgorithm(s []byte) (int, string) {
	if len(s) == 0 || len(s) > ocsfrec.MaxFileHash {
		return -1, ""
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return 0, "Unknown"
		}
	}
	switch len(s) {
	case 32:
		return 1, "MD5"
	case 40:
		return 2, "SHA-1"
	case 64:
		return 3, "SHA-256"
	}
	return 0, "Unknown"
}
