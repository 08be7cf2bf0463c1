//go:build !unix

package secret

import "os"

// openFlags open a file for ReadFile; ReadFile refuses what is not a
// regular file before it opens it.
const openFlags = os.O_RDONLY
