package ocsf

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

func changedFileHead(r *rec, h *head) {
	h.activity = 3 // Update: the platform reports files whose content changed
	v := r.f[cfThreatInfo]
	if isNull(v) {
		return
	}
	// threatTags and threatSource have no attribute in this class: the
	// member stays unmapped; its severity becomes the event's.
	var vals [1][]byte
	if _, ok := r.lookup(v, []string{"threatSeverity"}, vals[:]); !ok {
		r.fallback(cfThreatInfo)
		return
	}
	tok, ok := r.strIn(cfThreatInfo, vals[0])
	if !ok {
		return
	}
	switch {
	case r.equalFold(tok, "INFO"), r.equalFold(tok, "INFORMATIONAL"):
		h.severity = severityInformational
	case r.equalFold(tok, "LOW"):
		h.severity = severityLow
	case r.equalFold(tok, "MEDIUM"):
		h.severity = severityMedium
	case r.equalFold(tok, "HIGH"):
		h.severity = severityHigh
	case r.equalFold(tok, "CRITICAL"):
		h.severity = severityCritical
	default:
		h.severity, h.severityName = severityOther, tok
	}
}

func changedFileBody(w *enc, r *rec) {
	startEnd(w, r, cfStartTime, cfEndTime)
	// OCSF requires the actor; the platform does not say who changed the file.
	placeholderObject(w, "actor", "app_name")
	mid := r.id(cfMid)
	device(w, mid) // required
	if mid.ok {
		r.mapped(cfMid)
	}

	w.open("file")
	if tok, ok := r.str(cfFilePath); ok {
		p := r.text(tok)
		name, parent := splitPath(p)
		if len(name) == 0 {
			name = p
		}
		if len(name) == 0 {
			w.str("name", placeholder)
		} else {
			w.strBytes("name", name)
		}
		w.token("path", tok)
		if parent != nil {
			w.strBytes("parent_folder", parent)
		}
		if ext := extension(name); ext != nil {
			w.strBytes("ext", ext)
		}
		r.mapped(cfFilePath)
	} else {
		w.str("name", placeholder)
	}
	w.int("type_id", 1)
	w.str("type", "Regular File")
	if tok, ok := r.str(cfHash); ok {
		if alg, name := hashAlgorithm(r.text(tok)); alg >= 0 {
			w.openArray("hashes")
			w.open("")
			w.int("algorithm_id", int64(alg))
			w.str("algorithm", name)
			w.token("value", tok)
			w.close()
			w.closeArray()
			r.mapped(cfHash)
		} else {
			r.fallback(cfHash)
		}
	}
	if ms, ok := r.time(cfMtime); ok {
		w.int("modified_time", ms)
		r.mapped(cfMtime)
	}
	if n, ok := r.integer(cfSize); ok {
		w.int("size", n)
		r.mapped(cfSize)
	}
	w.close()
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
	if len(s) == 0 || len(s) > maxFileHash {
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
