package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	icli "github.com/swarmrt/swarm/internal/cli"
	"github.com/swarmrt/swarm/temporal"
)

// flags are the command's Temporal flags; each replaces its field of the
// file's temporal section.
type flags struct {
	address, namespace, taskQueue string
}

// engine plugs Temporal into the swarm command; its messages go to
// stderr.
func engine(stderr io.Writer) *icli.Engine {
	var f flags
	var (
		hook  *temporal.Hook
		c     client.Client
		queue string
	)
	return &icli.Engine{
		Command: "swarm-temporal",
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&f.address, "temporal-address", "", "Temporal frontend HOST:PORT (default: the file's temporal.address, else "+client.DefaultHostPort+"); set, it runs every swarm on Temporal when the file has no temporal section")
			fs.StringVar(&f.namespace, "temporal-namespace", "", "Temporal namespace (default: the file's temporal.namespace, else "+client.DefaultNamespace+")")
			fs.StringVar(&f.taskQueue, "temporal-task-queue", "", "task queue of the swarms' workflows (default: the file's temporal.task_queue, else "+temporal.DefaultTaskQueue+")")
		},
		Open: func(ctx context.Context, file *config.File, cfg *swarm.Config) (func(), error) {
			var sec config.Temporal
			switch {
			case file != nil && file.Temporal != nil:
				sec = *file.Temporal
			case f.address == "":
				return nil, nil // no Temporal here: Swarm's own engine
			}
			opts, q, err := clientOptions(sec, f, stderr)
			if err != nil {
				return nil, err
			}
			c, err = client.NewLazyClient(opts)
			if err != nil {
				return nil, fmt.Errorf("temporal: %w", err)
			}
			queue = q
			hook = temporal.NewHook(temporal.Options{Client: c, TaskQueue: q}, sec.Swarms...)
			cfg.Engine = hook
			return c.Close, nil
		},
		Serve: func(ctx context.Context, rt *swarm.Runtime) error {
			e := hook.Engine()
			if e == nil {
				return errors.New("temporal: the engine is not bound to the runtime")
			}
			w := worker.New(c, queue, worker.Options{})
			e.Register(w)
			if err := w.Start(); err != nil {
				return fmt.Errorf("temporal worker of task queue %s: %w", queue, err)
			}
			fmt.Fprintf(stderr, "swarm: Temporal worker of task queue %s\n", queue)
			<-ctx.Done()
			w.Stop()
			return nil
		},
	}
}

// clientOptions merges the file's temporal section with the flags and
// returns the client's options and the task queue.
func clientOptions(sec config.Temporal, f flags, stderr io.Writer) (client.Options, string, error) {
	for _, o := range []struct {
		flag string
		dst  *string
	}{{f.address, &sec.Address}, {f.namespace, &sec.Namespace}, {f.taskQueue, &sec.TaskQueue}} {
		if o.flag != "" {
			*o.dst = o.flag
		}
	}
	if sec.TaskQueue == "" {
		sec.TaskQueue = temporal.DefaultTaskQueue
	}
	opts := client.Options{
		HostPort:  sec.Address,
		Namespace: sec.Namespace,
		Logger:    tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	}
	if sec.TLS != nil {
		cfg, err := tlsConfig(sec.TLS)
		if err != nil {
			return opts, "", err
		}
		opts.ConnectionOptions.TLS = cfg
	}
	return opts, sec.TaskQueue, nil
}

// tlsConfig makes the TLS configuration of the temporal section's tls.
func tlsConfig(t *config.TemporalTLS) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, fmt.Errorf("temporal: tls: ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("temporal: tls: ca: %s holds no PEM certificate", t.CA)
		}
		cfg.RootCAs = pool
	}
	if t.Cert != "" {
		cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("temporal: tls: cert and key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
