package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
)

// inspectCmd prints the request a model call of a run sent (see
// swarm.Runtime.Request).
func (a *app) inspectCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "inspect RUN KEY",
		Short: "Print the request a model call of a run sent, as JSON",
		Long: "Print the request the model call journaled under KEY (the key of a model_response event, as in\n" +
			"swarm events, such as t2/model) received, rebuilt from the run's journal: the instructions (system),\n" +
			"the messages after history filtering and compaction, the tools with their schemas, and token counts\n" +
			"per part (estimates: a quarter of the characters; tokens.reported is the provider's count). \"check\" is\n" +
			"\"verified\" when the rebuilt request matches the digest journaled with the response, \"differs\" when\n" +
			"the swarm's definition changed since the call.",
		Args: cobra.ExactArgs(2),
		RunE: a.withDefs(func(ctx context.Context, rt *swarm.Runtime, _ *config.File, args []string) error {
			req, err := rt.Request(ctx, args[0], args[1])
			if errors.Is(err, swarm.ErrNotFound) {
				if _, serr := rt.Status(ctx, args[0]); errors.Is(serr, swarm.ErrNotFound) {
					return a.notFound(args[0])
				}
				return usageError{err} // the run has no such step
			}
			if errors.Is(err, swarm.ErrInvalidInput) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			writeJSON(a.stdout, req)
			return nil
		}),
	}
}
