// Package memlimit sets the Go runtime's soft memory limit from the
// container's memory limit (the cgroup's), so that the garbage collector
// works harder before the kernel's OOM killer would, instead of letting
// the heap grow to twice what is live. An operator's GOMEMLIMIT always
// wins; without a cgroup limit nothing changes.
package memlimit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// Share is the fraction of the container's limit given to the Go runtime:
// the rest is for what the runtime does not count (the files the process
// maps, such as the checkpoint, and the kernel's own accounting).
const Share = 0.9

// noLimit is what cgroup v1 reports for "no limit" (a page-aligned
// maximum); any value from here up means none.
const noLimit = 1 << 62

// limitFiles returns the files that may hold the process's memory limit,
// the most specific first: its own cgroup's (self is /proc/self/cgroup:
// "0::/system.slice/collector.service" under systemd, "0::/" in a
// container with its own cgroup namespace), then the hierarchy's root (a
// container that mounts its cgroup there), for v2's unified hierarchy and
// v1's memory controller.
func limitFiles(root string, self []byte) []string {
	var files []string
	for _, line := range strings.Split(string(self), "\n") {
		id, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		ctrls, path, ok := strings.Cut(rest, ":")
		if !ok || path == "/" {
			continue
		}
		if id == "0" && ctrls == "" {
			files = append(files, filepath.Join(root, path, "memory.max"))
		} else if slices.Contains(strings.Split(ctrls, ","), "memory") {
			files = append(files, filepath.Join(root, "memory", path, "memory.limit_in_bytes"))
		}
	}
	return append(files, filepath.Join(root, "memory.max"), filepath.Join(root, "memory", "memory.limit_in_bytes"))
}

// Limit returns the memory limit of the process's cgroup, with the cgroup
// hierarchy mounted at root (normally /sys/fs/cgroup) and self the text of
// /proc/self/cgroup; false when there is none ("max", v1's huge value, or
// no cgroup file at all).
func Limit(root string, self []byte) (int64, bool, error) {
	for _, name := range limitFiles(root, self) {
		b, err := os.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, false, fmt.Errorf("read the memory limit: %w", err)
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("read the memory limit: %s: %q is not a number of bytes", name, v)
		}
		if n <= 0 || n >= noLimit {
			return 0, false, nil
		}
		return n, true, nil
	}
	return 0, false, nil
}

// Set gives the Go runtime a soft memory limit of Share of the process's
// cgroup limit (Limit), unless getenv("GOMEMLIMIT") is set (the runtime
// read it already) or there is no cgroup limit. It returns the limit it
// set, 0 when it set none.
func Set(root string, self []byte, getenv func(string) string) (int64, error) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	n, ok, err := Limit(root, self)
	if err != nil || !ok {
		return 0, err
	}
	limit := int64(float64(n) * Share)
	debug.SetMemoryLimit(limit)
	return limit, nil
}
