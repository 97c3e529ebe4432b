// Command evals runs the support desk's eval set (support.eval.yaml)
// against two configurations of the desk, swarm.yaml and swarm-v2.yaml,
// on scripted models, and prints each report and their comparison: what
// `swarm eval run support.eval.yaml --config swarm.yaml --config
// swarm-v2.yaml` prints, from Go. The set has a trajectory case, an
// output case, a case a judge model scores and a conversation with a
// simulated customer.
//
//	go run ./examples/evals
//
// It exits 0 when swarm.yaml reaches the set's threshold (swarm-v2.yaml
// is the candidate that does not: the comparison says so).
package main

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/eval"
	_ "github.com/swarmrt/swarm/model/scripted" // the scripted provider registers itself
	"github.com/swarmrt/swarm/store/memory"
)

//go:embed swarm.yaml swarm-v2.yaml script.yaml script-v2.yaml support.eval.yaml tools
var files embed.FS

func main() {
	ok, err := run(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// run evaluates both configurations and reports whether the first passed.
func run(ctx context.Context) (bool, error) {
	dir, err := unpack()
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	set, err := eval.Load(filepath.Join(dir, "support.eval.yaml"))
	if err != nil {
		return false, err
	}
	var reports []*eval.Report
	for _, cfg := range []string{"swarm.yaml", "swarm-v2.yaml"} {
		r, err := evaluate(ctx, set, filepath.Join(dir, cfg), cfg)
		if err != nil {
			return false, err
		}
		fmt.Printf("== %s\n", cfg)
		if err := eval.WriteTable(os.Stdout, r); err != nil {
			return false, err
		}
		fmt.Println()
		reports = append(reports, r)
	}
	fmt.Printf("== %s vs %s\n", reports[0].Config, reports[1].Config)
	if err := eval.WriteComparison(os.Stdout, eval.Compare(reports[0], reports[1])); err != nil {
		return false, err
	}
	return reports[0].Pass, nil
}

// evaluate runs set against the definitions in path, labelled label, on
// a runtime of its own.
func evaluate(ctx context.Context, set *eval.Set, path, label string) (*eval.Report, error) {
	defs, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	defer defs.Close()
	m, err := defs.OpenModel(defs.Model)
	if err != nil {
		return nil, err
	}
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: m, ModelSpec: defs.Model, OpenModel: defs.OpenModel})
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	if err := defs.Register(rt); err != nil {
		return nil, err
	}
	if err := eval.Define(rt, eval.Options{}); err != nil {
		return nil, err
	}
	return eval.Run(ctx, rt, set, eval.RunOptions{Config: label})
}

// unpack writes the example's files to a temporary directory: the
// configurations name their script and tool files relative to themselves.
func unpack() (string, error) {
	dir, err := os.MkdirTemp("", "swarm-evals")
	if err != nil {
		return "", err
	}
	err = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if err == nil {
				err = os.MkdirAll(filepath.Join(dir, p), 0o755)
			}
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, p), b, 0o755)
	})
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}
