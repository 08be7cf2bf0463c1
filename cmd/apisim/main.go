// Command apisim runs the API simulator (internal/apisim) on its own: the
// core and edge endpoints of CONTRACT C1-C8 with synthetic, deterministic
// data, for the demo and for manual tests. Run it with --help for the knobs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/svcexport/collector/internal/apisim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "apisim:", err)
		os.Exit(1)
	}
}

// run starts the simulator and serves until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, o, err := parseArgs(args, stderr)
	if err != nil {
		return err
	}
	sim, err := apisim.New(cfg)
	if err != nil {
		return err
	}
	if err := sim.Start(o.listen); err != nil {
		_ = sim.Close()
		return err
	}
	fmt.Fprintf(stdout, "apisim core API: %s\n", sim.URL())
	fmt.Fprintf(stdout, "apisim edge API: %s (Authorization: Bearer %s)\n", sim.EdgeURL(), cfg.EdgeToken)
	fmt.Fprintf(stdout, "accounts: %v (organization audit logs: Org-Access: true)\n", cfg.Accounts)
	for _, k := range cfg.Keys {
		fmt.Fprintf(stdout, "key %s  secret %s  (%s %s, user %s, home account %s)\n",
			k.KeyID, k.Secret, cfg.SecretHeader, k.Role, k.User, k.Account)
	}
	fmt.Fprintf(stdout, "truth: %s/_truth?source=S&account=A&start=T&end=T  stats: %s/_stats\n", sim.URL(), sim.URL())
	<-ctx.Done()
	fmt.Fprintln(stdout, "apisim: stopping")
	return sim.Close()
}
