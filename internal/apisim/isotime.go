package apisim

import (
	"errors"
	"strconv"
	"time"
)

// appendISO appends Unix milliseconds as ISO 8601 with milliseconds in UTC,
// "2026-11-20T10:00:00.123Z", or with a "+0000" offset when plus is set (a
// form C3 says records may carry). It avoids time.Format on the hot path.
func appendISO(dst []byte, ms int64, plus bool) []byte {
	days := floorDiv(ms, 86400000)
	rem := ms - days*86400000
	y, mo, d := civil(days)
	dst = append4(dst, y)
	dst = append(dst, '-')
	dst = append2(dst, mo)
	dst = append(dst, '-')
	dst = append2(dst, d)
	dst = append(dst, 'T')
	dst = append2(dst, int(rem/3600000))
	dst = append(dst, ':')
	dst = append2(dst, int(rem/60000%60))
	dst = append(dst, ':')
	dst = append2(dst, int(rem/1000%60))
	dst = append(dst, '.')
	f := int(rem % 1000)
	dst = append(dst, byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
	if plus {
		return append(dst, "+0000"...)
	}
	return append(dst, 'Z')
}

func append2(dst []byte, v int) []byte { return append(dst, byte('0'+v/10), byte('0'+v%10)) }

func append4(dst []byte, v int) []byte {
	if v < 0 || v > 9999 {
		return strconv.AppendInt(dst, int64(v), 10)
	}
	return append(dst, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}

// civil converts days since 1970-01-01 to a proleptic Gregorian date
// (H. Hinnant's days_from_civil inverse).
func civil(z int64) (y, m, d int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	yy := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	dd := doy - (153*mp+2)/5 + 1
	mm := mp + 3
	if mm > 12 {
		mm -= 12
	}
	if mm <= 2 {
		yy++
	}
	return int(yy), int(mm), int(dd)
}

// errTimeFormat is returned for a time outside the two forms C3 allows.
var errTimeFormat = errors.New("time must be yyyy-MM-ddTHH:mm:ssZ or yyyy-MM-ddTHH:mm:ss.SSSZ (UTC)")

// parseAPITime reads a search time strictly: the seconds form
// yyyy-MM-ddTHH:mm:ssZ or the milliseconds form yyyy-MM-ddTHH:mm:ss.SSSZ
// (CONTRACT C3). Anything else is an error.
func parseAPITime(s string) (time.Time, error) {
	var layout string
	switch {
	case len(s) == 20 && s[19] == 'Z':
		layout = "2006-01-02T15:04:05Z"
	case len(s) == 24 && s[19] == '.' && s[23] == 'Z':
		layout = "2006-01-02T15:04:05.000Z"
	default:
		return time.Time{}, errTimeFormat
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 4, 7:
			if c != '-' {
				return time.Time{}, errTimeFormat
			}
		case 10:
			if c != 'T' {
				return time.Time{}, errTimeFormat
			}
		case 13, 16:
			if c != ':' {
				return time.Time{}, errTimeFormat
			}
		case 19:
		default:
			if i < len(s)-1 && (c < '0' || c > '9') {
				return time.Time{}, errTimeFormat
			}
		}
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return time.Time{}, errTimeFormat
	}
	return t.UTC(), nil
}
