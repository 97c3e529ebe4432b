package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
)

// Engine plugs another durable engine into the command: swarm-temporal
// is this command with Temporal's (module github.com/swarmrt/swarm/temporal,
// whose dependencies the swarm command does not carry).
type Engine struct {
	// Command names the command that has the engine ("swarm-temporal").
	Command string
	// Flags adds the engine's flags to every command.
	Flags func(fs *pflag.FlagSet)
	// Open sets the engine of a command's runtime (cfg.Engine) for the
	// definitions file (nil when there is none), or leaves it unset when
	// the command's runs are all Swarm's own. closeFn ends what Open
	// started; it is called when the command is done.
	Open func(ctx context.Context, file *config.File, cfg *swarm.Config) (closeFn func(), err error)
	// Serve, when set, runs beside swarm serve on its runtime (the
	// engine's worker) until ctx ends; an error ends swarm serve.
	Serve func(ctx context.Context, rt *swarm.Runtime) error
}

// MainWith is Main for the command with engine e.
func MainWith(e *Engine, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(&app{stdout: stdout, stderr: stderr, stdin: stdin, engine: e}, args)
}

// openEngine sets cfg.Engine for the definitions file (nil if none). A
// file with a temporal section is refused without an engine.
func (a *app) openEngine(ctx context.Context, file *config.File, cfg *swarm.Config) error {
	if a.engine == nil {
		if file != nil && file.Temporal != nil {
			return usageError{fmt.Errorf("%s has a temporal section: its swarms run on Temporal, which this command does not include; "+
				"run the file with swarm-temporal (go install github.com/swarmrt/swarm/temporal/cmd/swarm-temporal), the swarm command with Temporal's engine", file.Path)}
		}
		return nil
	}
	closeFn, err := a.engine.Open(ctx, file, cfg)
	if err != nil {
		return usageError{err}
	}
	if closeFn != nil {
		a.closers = append(a.closers, closeFn)
	}
	a.engineOn = cfg.Engine != nil
	return nil
}
