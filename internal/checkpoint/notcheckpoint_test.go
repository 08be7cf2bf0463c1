package checkpoint

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A checkpoint.path set to the wrong file, a token file say, is refused
// with an error that names the path and says it is no checkpoint, and
// shows none of its bytes (issue 29 item 9: it showed the first 24).
func TestOpenShowsNoByteOfAFileThatIsNoCheckpoint(t *testing.T) {
	t.Parallel()
	const token = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LWVkZ2UtdG9rZW4.k9Xq\n"
	path := writeCopy(t, []byte(token))
	d, err := Open(path, WithOpenTimeout(100*time.Millisecond))
	if err == nil {
		d.Close()
		t.Fatal("Open took a token file for a checkpoint")
	}
	if !errors.Is(err, ErrNotCheckpoint) || !strings.Contains(err.Error(), "checkpoint file "+path+" is not a checkpoint") {
		t.Fatalf("error %q: want ErrNotCheckpoint naming %s", err, path)
	}
	for i := 0; i+4 <= len(token); i++ {
		if piece := token[i : i+4]; strings.Contains(err.Error(), piece) {
			t.Fatalf("error %q shows %q of the file", err, piece)
		}
	}
}
