package harness

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// The operator's side of the collector: commands whose standard output and
// standard error matter apart (state --json), and commands run on a
// terminal (the progress display).

// CLIOut runs the collector like CLI (args, --config, the environment of
// Environ(env...), within a minute) but returns its standard output and
// standard error apart.
func (c *Collector) CLIOut(tb testing.TB, env []string, args ...string) (code int, stdout, stderr string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, CollectorBin(tb), append(args, "--config", c.ConfigPath())...)
	cmd.Env = c.Environ(env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	code = exitCode(tb, cmd.Run(), args)
	return code, out.String(), errOut.String()
}

// RunCLIEnv is RunCLI with exactly the environment env (none of this
// process's): a CI job without the collector's secrets, for instance.
func RunCLIEnv(tb testing.TB, env []string, args ...string) (int, string) {
	tb.Helper()
	return run(tb, CollectorBin(tb), env, args...)
}

// StartCLI starts the collector with args and --config (e.g. "state",
// "--watch") in the background, with the environment of Environ(env...);
// its standard output goes to stdout when not nil, else with its standard
// error to the Process's Logs.
func (c *Collector) StartCLI(tb testing.TB, stdout io.Writer, env []string, args ...string) *Process {
	tb.Helper()
	cmd := exec.Command(CollectorBin(tb), append(args, "--config", c.ConfigPath())...)
	cmd.Env = c.Environ(env...)
	cmd.Stdout = stdout
	return StartCommand(tb, cmd)
}

// The size of the pseudo-terminal RunTerminal gives the collector.
const (
	TerminalRows = 40
	TerminalCols = 120
)

// RunTerminal runs the collector with args and --config on a
// pseudo-terminal of TerminalRows x TerminalCols (its standard input, output and error,
// as in an operator's shell), with the environment of Environ(env...), to
// its end within timeout, and returns its exit code and everything it
// wrote to the terminal, escape sequences included. A run that does not
// end in time fails tb.
func (c *Collector) RunTerminal(tb testing.TB, timeout time.Duration, env []string, args ...string) (int, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, CollectorBin(tb), append(args, "--config", c.ConfigPath())...)
	cmd.Env = c.Environ(env...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: TerminalRows, Cols: TerminalCols})
	if err != nil {
		tb.Fatalf("start on a pseudo-terminal: %v", err)
	}
	var out simtest.SyncBuffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		// Ends with EIO once the collector (the terminal's last user)
		// exited.
		_, _ = io.Copy(&out, tty)
	}()
	err = cmd.Wait()
	select {
	case <-copied:
	case <-time.After(5 * time.Second):
	}
	tty.Close()
	<-copied
	if ctx.Err() != nil {
		tb.Fatalf("collector %v did not end within %v on the terminal\n%s", args, timeout, Tail(out.String(), 40))
	}
	return exitCode(tb, err, args), out.String()
}
