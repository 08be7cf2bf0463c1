package harness

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ProcMem is a process's memory as Linux's /proc/PID/status gives it, in
// bytes.
type ProcMem struct {
	RSS int64 // VmRSS: resident now
	HWM int64 // VmHWM: the peak resident set so far
	// Anon is RssAnon, the part of RSS that is the process's own memory
	// (heap, stacks); the rest is files it maps (its executable, the
	// checkpoint file bbolt maps), page cache the kernel can drop.
	Anon int64
}

// ReadProcMem reads pid's ProcMem (Linux).
func ReadProcMem(pid int) (ProcMem, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcMem{}, err
	}
	field := func(line, name string) (int64, bool) {
		v, found := strings.CutPrefix(line, name)
		if !found {
			return 0, false
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		return n * 1024, err == nil // kB
	}
	var m ProcMem
	var gotRSS, gotHWM bool
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := field(line, "VmRSS:"); ok {
			m.RSS, gotRSS = v, true
		}
		if v, ok := field(line, "VmHWM:"); ok {
			m.HWM, gotHWM = v, true
		}
		if v, ok := field(line, "RssAnon:"); ok {
			m.Anon = v
		}
	}
	if !gotRSS || !gotHWM {
		return m, errors.New("no VmRSS and VmHWM in /proc/" + strconv.Itoa(pid) + "/status")
	}
	return m, nil
}

// TicksPerSecond is the unit of CPUTicks (Linux's USER_HZ).
const TicksPerSecond = 100

// CPUTicks is the user+system CPU time of process pid in clock ticks
// (/proc/PID/stat fields 14 and 15, TicksPerSecond a second); false when
// it cannot be read.
func CPUTicks(pid int) (int64, bool) {
	if pid <= 0 {
		return 0, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 || i+2 > len(s) {
		return 0, false
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	return u + st, err1 == nil && err2 == nil
}

// SelfCPU returns the CPU time (user + system) of this process so far.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// LoadNote returns the load averages of /proc/loadavg, for a benchmark's
// log: figures depend on the machine's load.
func LoadNote() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load: unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "load: unknown"
	}
	return "load average " + strings.Join(f[:3], " ")
}

// LoadAvg1 returns the 1-minute load average, -1 when unknown.
func LoadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
