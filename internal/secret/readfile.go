package secret

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxFileBytes is the most a secret file (a *_file key, re-read at every
// authentication where the client does so) or a ${file:PATH} reference of
// the configuration reads: a secret or a setting is a few bytes, never
// megabytes. A larger file, or one that
// never ends (/dev/zero), is refused instead of read into memory.
const MaxFileBytes = 64 << 10

// ErrNotRegular is the error of ReadFile for a path that is not a regular
// file: a directory, a device (/dev/zero, /dev/stdin), a named pipe or a
// socket, whose reading may never end or never start.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is the error of ReadFile for a regular file over its bound.
var ErrTooLarge = errors.New("file too large")

// ReadFile returns the content of the regular file at path, which must
// hold at most limit bytes. It looks before it reads: the path must name a
// regular file (os.Stat), and so must the file it opened (the path may have
// changed in between), which it opens without blocking (openFlags), so
// that a named pipe can neither hang it before its Stat nor after; and it
// reads at most limit+1 bytes (io.LimitReader), so that a file that grows
// or lies about its size cannot fill the memory. Its errors wrap
// ErrNotRegular, ErrTooLarge or the os error; FileProblem words them.
func ReadFile(path string, limit int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, fi, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(path, fi, limit); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(b)) > limit {
		return nil, &fileError{path: path, err: ErrTooLarge, detail: fmt.Sprintf("is larger than %s", sizeText(limit))}
	}
	return b, nil
}

// regular checks what Stat said of path.
func regular(path string, fi fs.FileInfo, limit int64) error {
	if !fi.Mode().IsRegular() {
		return &fileError{path: path, err: ErrNotRegular, detail: "is not a regular file (" + kind(fi.Mode()) + ")"}
	}
	if fi.Size() > limit {
		return &fileError{path: path, err: ErrTooLarge, detail: fmt.Sprintf("is larger than %s (%s)", sizeText(limit), sizeText(fi.Size()))}
	}
	return nil
}

// fileError is a file ReadFile refused before or while reading it.
type fileError struct {
	path   string
	err    error // ErrNotRegular or ErrTooLarge
	detail string
}

func (e *fileError) Error() string { return "file " + e.path + " " + e.detail }
func (e *fileError) Unwrap() error { return e.err }

// kind names the type of a file that is not a regular one.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.Type().String()
}

// sizeText writes n bytes for a message: "64 KiB", "200 MiB", "12 bytes".
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// FileProblem says why path cannot be used, without its content.
func FileProblem(path string, err error) string {
	var fe *fileError
	switch {
	case errors.As(err, &fe):
		return fe.Error()
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("file %s does not exist", path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("file %s is not readable by this user", path)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("file %s cannot be read: %v", path, pe.Err)
	}
	return fmt.Sprintf("file %s cannot be read: %v", path, err)
}
