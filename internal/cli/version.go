package cli

import (
	"cmp"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Version, when set at link time, names the release, e.g.
//
//	go build -ldflags "-X github.com/swarmrt/swarm/internal/cli.Version=v0.1.0" ./cmd/swarm
//
// as .ci/release.sh does, so that `swarm version` names it even where the
// build has no VCS information (a release archive, a container image). It is
// also the version announced to MCP clients ("dev" when unset).
var Version string

// version describes the build: the version stamped at link time, else the
// module version of its embedded build information ("(devel)" for a build
// from a checkout), then the commit and its time, whether the checkout had
// changes, and the Go version.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return cmp.Or(Version, "(unknown build)")
	}
	parts := []string{cmp.Or(Version, bi.Main.Version, "(devel)")}
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = " (modified)"
			}
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		parts = append(parts, "commit "+rev+dirty)
	}
	if at != "" {
		parts = append(parts, at)
	}
	parts = append(parts, bi.GoVersion)
	return strings.Join(parts, ", ")
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of the swarm command (also: swarm --version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(a.stdout, "swarm %s\n", version())
			return nil
		},
	}
}
