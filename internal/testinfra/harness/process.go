package harness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// Process is a program started in the background by a test: a collector
// (Collector.Start) or anything else (StartCommand). Its methods are safe
// for concurrent use.
type Process struct {
	cmd  *exec.Cmd
	logs *simtest.SyncBuffer
	done chan struct{} // closed once the process is gone
	err  error         // how it exited; set before done closes
}

// StartCommand starts cmd in the background. Its standard error, and its
// standard output unless cmd has one, go to Logs. When tb ends a process
// still running is killed (SIGKILL) and waited for.
func StartCommand(tb testing.TB, cmd *exec.Cmd) *Process {
	tb.Helper()
	p := &Process{cmd: cmd, logs: &simtest.SyncBuffer{}, done: make(chan struct{})}
	if cmd.Stdout == nil {
		cmd.Stdout = p.logs
	}
	if cmd.Stderr == nil {
		cmd.Stderr = p.logs
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", cmd.Path, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(p.Kill)
	return p
}

// Start starts `collector run` (plus args, e.g. "--once") in the background;
// its logs (and its standard output, unless Config.Stdout takes it) go to
// Logs. When tb ends a collector still running is killed.
func (c *Collector) Start(tb testing.TB, args ...string) *Process {
	tb.Helper()
	cmd := c.command(context.Background(), tb, append([]string{"run"}, args...)...)
	if c.cfg.Stdout != nil {
		cmd.Stdout = c.cfg.Stdout
	}
	return StartCommand(tb, cmd)
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Signal sends sig; a process that is gone ignores it.
func (p *Process) Signal(sig os.Signal) { _ = p.cmd.Process.Signal(sig) }

// Terminate sends SIGTERM, the graceful stop.
func (p *Process) Terminate() { p.Signal(syscall.SIGTERM) }

// Kill sends SIGKILL and waits until the process is gone. Safe to call
// after it exited.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.Signal(syscall.SIGKILL)
	<-p.done
}

// KillAfter kills the process (Kill) d from now, and fails tb when it
// ended by itself before: a test that means to kill name (e.g. "run 3") in
// the middle of its work has tested nothing if the work was already done.
func (p *Process) KillAfter(tb testing.TB, d time.Duration, name string) {
	tb.Helper()
	select {
	case <-p.done:
		tb.Fatalf("%s ended by itself before the kill (%v): backfill too small for the test\n%s", name, p.Err(), p.Tail(20))
	case <-time.After(d):
	}
	p.Kill()
}

// KillRuns starts c with --once kills times and SIGKILLs each run at a
// random moment between least and least+spread (from rng) after it
// started (KillAfter). The first run is killed only after one of its
// streams committed (WaitCommitted, so Config.Metrics must be set): on a
// loaded machine the start of slow sinks can outlast every random moment,
// and then no kill would hit a backfill in progress. It returns the
// records the checkpoint holds as delivered after the last kill, and fails
// tb when that is 0.
func (c *Collector) KillRuns(tb testing.TB, kills int, rng *rand.Rand, least, spread time.Duration) int64 {
	tb.Helper()
	if c.cfg.Metrics == "" {
		tb.Fatal("KillRuns: Config.Metrics is not set, so the first commit cannot be seen")
	}
	for i := range kills {
		p := c.Start(tb, "--once")
		if i == 0 {
			WaitCommitted(tb, p, c.cfg.Metrics, c.cfg.Start, nil, 1, 2*time.Minute)
		}
		p.KillAfter(tb, least+time.Duration(rng.Int64N(int64(spread))), fmt.Sprintf("run %d", i))
	}
	var committed int64
	for _, st := range c.Watermarks(tb) {
		committed += st.Delivered
	}
	if committed == 0 {
		tb.Fatalf("nothing was committed in %d killed runs: the kills never hit a backfill in progress", kills)
	}
	return committed
}

// Exited is closed once the process is gone; Err then says how it exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Err is how the process exited (nil: status 0) once Exited is closed, nil
// before.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// State is the exited process's state (CPU times, rusage), nil while it
// runs.
func (p *Process) State() *os.ProcessState {
	select {
	case <-p.done:
		return p.cmd.ProcessState
	default:
		return nil
	}
}

// Wait waits up to d for the process to exit by itself and returns how it
// exited. A process still running after d is killed and fails tb with the
// tail of its logs.
func (p *Process) Wait(tb testing.TB, d time.Duration) error {
	tb.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		p.Kill()
		tb.Fatalf("%s did not exit within %v\n%s", p.cmd.Path, d, p.Tail(40))
		return nil
	}
}

// Stop sends SIGTERM and waits up to d; a process still running then is
// killed. It returns how the process exited and is safe to call twice.
func (p *Process) Stop(d time.Duration) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	p.Terminate()
	select {
	case <-p.done:
	case <-time.After(d):
		p.Kill()
	}
	return p.err
}

// Logs returns what the process wrote to Logs so far.
func (p *Process) Logs() string { return p.logs.String() }

// Tail returns the last n lines of Logs.
func (p *Process) Tail(n int) string { return Tail(p.logs.String(), n) }

// Run is what one `collector run --once` did and cost.
type Run struct {
	// Logs are its standard error and, unless Config.Stdout took it, its
	// standard output.
	Logs string
	// Wall is from exec to exit; User and Sys are the CPU time of that
	// process alone (wait4 rusage), not of a simulator in the test's
	// process.
	Wall, User, Sys time.Duration
	// MaxRSS is the collector's peak resident set in bytes: the last
	// VmHWM read from /proc while it ran (every RSSEvery; a peak in its
	// last RSSEvery would be missed), 0 when it ended before the first
	// sample. RuMaxRSS is wait4's ru_maxrss, which on Linux is at least the
	// test process's own peak RSS when it started the collector (the
	// exec'ing child inherits the parent's high-water mark: the kernel
	// folds the old mm's into signal->maxrss at exec), so it is only
	// meaningful when ParentHWM is small.
	MaxRSS, RuMaxRSS, ParentHWM int64
	// MaxAnon is the largest RssAnon sampled (ProcMem.Anon): the peak of
	// the process's own memory, without the files it maps.
	MaxAnon int64
	// RSS holds VmRSS samples (bytes) taken every RSSEvery while it ran.
	RSS []int64
	// Scraped holds, per gauge of Config.Scrape, one sample a second.
	Scraped map[string][]float64
}

// CPU is User + Sys.
func (r *Run) CPU() time.Duration { return r.User + r.Sys }

// DoneRows is rows_delivered of the run's final "done" log line; logs
// without one fail tb.
func (r *Run) DoneRows(tb testing.TB) int64 {
	tb.Helper()
	return DoneRows(tb, r.Logs)
}

// PeakRSS is MaxRSS; a run that ended before the first sample of its
// memory fails tb.
func (r *Run) PeakRSS(tb testing.TB) int64 {
	tb.Helper()
	if r.MaxRSS == 0 {
		tb.Fatal("no VmHWM sample of the collector: it ended within the first sample interval")
	}
	return r.MaxRSS
}

// RSSEvery is how often RunOnce samples the collector's memory.
const RSSEvery = 200 * time.Millisecond

// RunOnce runs `collector run --once` to completion within timeout and
// returns what it did and cost; a run that fails (or does not end in time)
// fails tb with the tail of its logs.
func (c *Collector) RunOnce(tb testing.TB, timeout time.Duration) *Run {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := c.command(ctx, tb, "run", "--once")
	logs := &simtest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if c.cfg.Stdout != nil {
		cmd.Stdout = c.cfg.Stdout
	}
	parent, _ := ReadProcMem(os.Getpid())
	began := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	res := &Run{ParentHWM: parent.HWM, Scraped: map[string][]float64{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if c.cfg.Metrics != "" && len(c.cfg.Scrape) > 0 {
		wg.Go(func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					for k, v := range ScrapeGauges(c.cfg.Metrics, c.cfg.Scrape...) {
						res.Scraped[k] = append(res.Scraped[k], v)
					}
				}
			}
		})
	}
	wg.Go(func() {
		t := time.NewTicker(RSSEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if m, err := ReadProcMem(cmd.Process.Pid); err == nil {
					res.RSS = append(res.RSS, m.RSS)
					res.MaxRSS = max(res.MaxRSS, m.HWM)
					res.MaxAnon = max(res.MaxAnon, m.Anon)
				}
			}
		}
	})
	err := cmd.Wait()
	res.Wall = time.Since(began)
	close(stop)
	wg.Wait()
	res.Logs = logs.String()
	if err != nil {
		tb.Fatalf("collector run --once: %v\n%s", err, Tail(res.Logs, 40))
	}
	st := cmd.ProcessState
	res.User, res.Sys = st.UserTime(), st.SystemTime()
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		res.RuMaxRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	return res
}
