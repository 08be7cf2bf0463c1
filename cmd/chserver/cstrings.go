package main

import (
	"runtime"
	"unsafe"
)

// cStrings returns a C argv (char **) for args: NUL-terminated strings and a
// trailing NULL pointer. The memory is Go memory, which the collector never
// moves; free keeps it reachable until it is called, after the engine is
// done with it.
func cStrings(args []string) (argv unsafe.Pointer, free func()) {
	ptrs := make([]unsafe.Pointer, len(args)+1)
	for i, a := range args {
		b := make([]byte, len(a)+1)
		copy(b, a)
		ptrs[i] = unsafe.Pointer(&b[0])
	}
	return unsafe.Pointer(&ptrs[0]), func() { runtime.KeepAlive(ptrs) }
}
