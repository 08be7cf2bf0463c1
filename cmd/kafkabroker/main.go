// Command kafkabroker runs a small Kafka-protocol cluster (franz-go's kfake)
// on fixed loopback ports, for end-to-end tests, CI and benchmarks where no
// real Kafka is installable. It is not a production broker: one process, no
// replication, every broker in memory (optionally persisted to --data-dir).
//
// Usage:
//
//	kafkabroker [--listen 127.0.0.1] [--ports 19092[,19093,...]] [--data-dir DIR [--sync-writes]]
//	            [--tls-cert FILE --tls-key FILE] [--sasl-scram USER:PASS]... [--sasl-plain USER:PASS]...
//	            [--seed-topics NAME[:PARTITIONS],...] [--default-partitions N] [--auto-create-topics]
//	            [--broker-config KEY=VALUE]... [--blackhole] [--log-level none|error|warn|info|debug]
//
// It prints one line "ready ADDR[,ADDR...]" on stdout when every broker
// listens, logs to stderr, and stops on SIGTERM or SIGINT (exit 0). With
// --data-dir the cluster's topics, records, groups and producer state are
// written there and reloaded at the next start, so "stopped and started
// again" is a real restart; without it everything is lost at exit.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "kafkabroker:", err)
		os.Exit(1)
	}
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// options are the parsed flags.
type options struct {
	listen            string
	ports             []int
	dataDir           string
	syncWrites        bool
	tlsCert, tlsKey   string
	scram, plain      listFlag
	seedTopics        string
	defaultPartitions int
	autoCreate        bool
	brokerConfigs     listFlag
	blackhole         bool
	logLevel          string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("kafkabroker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var ports string
	fs.StringVar(&o.listen, "listen", "127.0.0.1", "IP address or host to listen on; it is also the address the brokers advertise")
	fs.StringVar(&ports, "ports", "19092", "comma-separated ports, one broker each (0 picks a free port)")
	fs.StringVar(&o.dataDir, "data-dir", "", "persist the cluster here and reload it at start (empty: memory only)")
	fs.BoolVar(&o.syncWrites, "sync-writes", false, "with --data-dir, fsync every produced batch")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "PEM certificate: serve TLS only (needs --tls-key)")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.Var(&o.scram, "sasl-scram", "USER:PASS, a SCRAM-SHA-256 and SCRAM-SHA-512 superuser; enables SASL (repeatable)")
	fs.Var(&o.plain, "sasl-plain", "USER:PASS, a PLAIN superuser; enables SASL (repeatable)")
	fs.StringVar(&o.seedTopics, "seed-topics", "", "topics to create at start: NAME[:PARTITIONS],...")
	fs.IntVar(&o.defaultPartitions, "default-partitions", 3, "partitions of seed topics without a count and of topics created with -1")
	fs.BoolVar(&o.autoCreate, "auto-create-topics", false, "let metadata requests create topics")
	fs.Var(&o.brokerConfigs, "broker-config", "KEY=VALUE broker config, e.g. message.max.bytes=1048588 (repeatable)")
	fs.BoolVar(&o.blackhole, "blackhole", false, "acknowledge produce requests without storing records (benchmarks)")
	fs.StringVar(&o.logLevel, "log-level", "warn", "none, error, warn, info or debug")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if ip := net.ParseIP(o.listen); ip != nil && ip.IsUnspecified() {
		return o, fmt.Errorf("--listen %s: brokers advertise the address they listen on, so it must be one clients can dial", o.listen)
	}
	for _, p := range strings.Split(ports, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 || n > 65535 {
			return o, fmt.Errorf("--ports: %q is not a port", p)
		}
		o.ports = append(o.ports, n)
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return o, errors.New("--tls-cert and --tls-key go together")
	}
	if o.syncWrites && o.dataDir == "" {
		return o, errors.New("--sync-writes needs --data-dir")
	}
	return o, nil
}

// clusterOpts turns options into kfake options.
func clusterOpts(o options, stderr io.Writer) ([]kfake.Opt, error) {
	level, ok := map[string]kfake.LogLevel{
		"none": kfake.LogLevelNone, "error": kfake.LogLevelError, "warn": kfake.LogLevelWarn,
		"info": kfake.LogLevelInfo, "debug": kfake.LogLevelDebug,
	}[o.logLevel]
	if !ok {
		return nil, fmt.Errorf("--log-level: unknown level %q", o.logLevel)
	}
	listen := o.listen
	opts := []kfake.Opt{
		kfake.Ports(o.ports...),
		kfake.DefaultNumPartitions(o.defaultPartitions),
		kfake.WithLogger(kfake.BasicLogger(stderr, level)),
		kfake.ListenFn(func(network, address string) (net.Listener, error) {
			// kfake asks for 127.0.0.1:PORT; listen on the chosen host.
			_, port, err := net.SplitHostPort(address)
			if err != nil {
				return nil, err
			}
			return net.Listen(network, net.JoinHostPort(listen, port))
		}),
	}
	if o.dataDir != "" {
		opts = append(opts, kfake.DataDir(o.dataDir))
		if o.syncWrites {
			opts = append(opts, kfake.SyncWrites())
		}
	}
	if o.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		opts = append(opts, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	}
	if len(o.scram)+len(o.plain) > 0 {
		opts = append(opts, kfake.EnableSASL())
	}
	for _, up := range o.scram {
		u, p, ok := strings.Cut(up, ":")
		if !ok || u == "" {
			return nil, fmt.Errorf("--sasl-scram: want USER:PASS, got %q", redact(up))
		}
		opts = append(opts, kfake.Superuser("SCRAM-SHA-256", u, p), kfake.Superuser("SCRAM-SHA-512", u, p))
	}
	for _, up := range o.plain {
		u, p, ok := strings.Cut(up, ":")
		if !ok || u == "" {
			return nil, fmt.Errorf("--sasl-plain: want USER:PASS, got %q", redact(up))
		}
		opts = append(opts, kfake.Superuser("PLAIN", u, p))
	}
	if o.seedTopics != "" {
		for _, spec := range strings.Split(o.seedTopics, ",") {
			name, parts, hasParts := strings.Cut(strings.TrimSpace(spec), ":")
			n := o.defaultPartitions
			if hasParts {
				var err error
				if n, err = strconv.Atoi(parts); err != nil || n < 1 {
					return nil, fmt.Errorf("--seed-topics: %q: partitions must be a positive number", spec)
				}
			}
			if name == "" {
				return nil, fmt.Errorf("--seed-topics: %q has no topic name", spec)
			}
			opts = append(opts, kfake.SeedTopics(int32(n), name))
		}
	}
	if o.autoCreate {
		opts = append(opts, kfake.AllowAutoTopicCreation())
	}
	if len(o.brokerConfigs) > 0 {
		cfgs := map[string]string{}
		for _, kv := range o.brokerConfigs {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--broker-config: want KEY=VALUE, got %q", kv)
			}
			cfgs[k] = v
		}
		opts = append(opts, kfake.BrokerConfigs(cfgs))
	}
	if o.blackhole {
		opts = append(opts, kfake.BlackholeProduce())
	}
	return opts, nil
}

// redact hides the password part of USER:PASS in error messages.
func redact(up string) string {
	if u, _, ok := strings.Cut(up, ":"); ok {
		return u + ":[redacted]"
	}
	return up
}

// run starts the cluster, prints "ready ADDRS" on stdout and serves until
// ctx ends; then it closes the cluster (persisting it with --data-dir).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	opts, err := clusterOpts(o, stderr)
	if err != nil {
		return err
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("start cluster: %w", err)
	}
	fmt.Fprintln(stdout, "ready", strings.Join(c.ListenAddrs(), ","))
	<-ctx.Done()
	fmt.Fprintln(stderr, "kafkabroker: stopping")
	c.Close()
	return nil
}
