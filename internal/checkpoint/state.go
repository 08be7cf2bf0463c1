package checkpoint

import (
	"time"

	"github.com/svcexport/collector/internal/cursor"
)

// State is what is stored for one stream.
type State struct {
	// Cursor is where the stream stands, as the cursor of its last
	// acknowledged page left it (cursor.Page.After): the watermark, the
	// chain in flight, the density, the paging limits and delays learnt,
	// and where the stream began. It is stored whole, so that no learnt
	// value is lost at a restart; only its Log and Alerts are not: the
	// window log and the alert marks are logs of their own (Changes,
	// DB.Windows, DB.Alerts), and a State read back has them nil.
	cursor.Cursor
	// Delivered counts the records acknowledged for the stream over its life.
	Delivered int64
	// Updated is when the state was last committed.
	Updated time.Time
}
