package cli

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// scaffold holds the files of a new project (swarm init); main.go there
// is compiled with the module, so it stays in step with the API.
//
//go:embed scaffold
var scaffold embed.FS

// modulePath is the module of this repository, which a new project's
// go.mod requires.
const modulePath = "github.com/swarmrt/swarm"

func (a *app) initCmd() *cobra.Command {
	var source string
	c := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Create a project that runs at once, offline: swarm.yaml, a scripted model, a command tool and a Go program",
		Long: "Create in DIR (default: the current directory) a project that runs offline: swarm.yaml (an agent, a swarm\n" +
			"and a command tool), script.yaml (what its scripted model answers), tools/note.sh, and main.go, a Go program\n" +
			"running the same swarm with the library, with its go.mod and go.sum. No existing file is overwritten.\n\n" +
			"go.mod requires " + modulePath + " from a checkout of its repository (a replace directive), so that\n" +
			"`go run .` builds offline: --source names it; by default it is the checkout DIR or the current directory\n" +
			"lies in. Without one, go.mod requires the version of this swarm command, and `go mod tidy` fetches it.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return a.scaffoldProject(dir, source)
		},
	}
	c.Flags().StringVar(&source, "source", "", "a checkout of "+modulePath+" to build against (default: the one DIR or the current directory is in)")
	return c
}

// scaffoldProject writes the project into dir, or nothing if one of its
// files exists.
func (a *app) scaffoldProject(dir, source string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	files := map[string][]byte{}
	err = fs.WalkDir(scaffold, "scaffold", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := scaffold.ReadFile(p)
		files[strings.TrimPrefix(p, "scaffold/")] = b
		return err
	})
	if err != nil {
		return err
	}
	files[".gitignore"] = []byte("# The runs of swarm run, swarm serve and go run . (SQLite).\n.swarm/\n")
	gomod, gosum, how, err := projectModule(abs, source)
	if err != nil {
		return err
	}
	files["go.mod"] = gomod
	if gosum != nil {
		files["go.sum"] = gosum
	}
	var names, exist []string
	for name := range files {
		names = append(names, name)
		if _, err := os.Lstat(filepath.Join(abs, name)); err == nil {
			exist = append(exist, filepath.Join(dir, name))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if len(exist) > 0 {
		slices.Sort(exist)
		return usageError{fmt.Errorf("init: would overwrite %s: swarm init writes only new files; choose a new or empty directory", strings.Join(exist, ", "))}
	}
	slices.Sort(names)
	for _, name := range names {
		path := filepath.Join(abs, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("init: %w", err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			return fmt.Errorf("init: %w", err)
		}
		_, err = f.Write(files[name])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("init: %w", err)
		}
	}
	cd := ""
	if dir != "." {
		cd = fmt.Sprintf("  cd %s\n", dir)
	}
	fmt.Fprintf(a.stdout, `Created in %s: %s.
%s
Try next:
%s  swarm run hello "durable execution"   # the swarm of swarm.yaml on its scripted model, offline
  swarm ls                                # its run, and what it cost
  swarm events RUN_ID                     # the run's journal: every step, recorded before the next
  go run . "durable execution"            # the same swarm from Go (main.go); kill it midway, run it again
  swarm serve                             # over HTTP, with the dashboard at http://127.0.0.1:8080/
Then edit script.yaml (what the model answers) and swarm.yaml, or set SWARM_MODEL
(e.g. openai:gpt-4.1-mini with OPENAI_API_KEY) to run the same swarm on a real model.
`, dir, strings.Join(names, ", "), how, cd)
	return nil
}

// projectModule returns the go.mod of a new project in dir, and its go.sum
// when it builds against a checkout of this module (source, or the one dir
// or the current directory lies in), with a line saying which.
func projectModule(dir, source string) (gomod, gosum []byte, how string, err error) {
	name := regexp.MustCompile(`[^a-z0-9._-]+`).ReplaceAllString(strings.ToLower(filepath.Base(dir)), "-")
	name = strings.Trim(name, "-.")
	if name == "" {
		name = "swarmproject"
	}
	var checkout string
	if source != "" {
		if checkout, err = filepath.Abs(source); err != nil {
			return nil, nil, "", err
		}
		if !isCheckout(checkout) {
			return nil, nil, "", usageError{fmt.Errorf("init: --source %s: no go.mod of module %s there", source, modulePath)}
		}
	} else {
		wd, _ := os.Getwd()
		for _, start := range []string{dir, wd} {
			if checkout = findCheckout(start); checkout != "" {
				break
			}
		}
	}
	if checkout == "" {
		// A release requires its own version; any other build leaves the
		// version to go mod tidy (the latest).
		mod := fmt.Sprintf("module %s\n\ngo 1.26.0\n", name)
		if v, _, _ := strings.Cut(version(), ", "); strings.HasPrefix(v, "v") {
			mod += fmt.Sprintf("\nrequire %s %s\n", modulePath, v)
		}
		return []byte(mod), nil, fmt.Sprintf("go.mod builds against the published %s: run `go mod tidy` once (it fetches the module), or pass --source with a checkout to build offline.\n", modulePath), nil
	}
	src, err := os.ReadFile(filepath.Join(checkout, "go.mod"))
	if err != nil {
		return nil, nil, "", fmt.Errorf("init: %w", err)
	}
	sum, err := os.ReadFile(filepath.Join(checkout, "go.sum"))
	if err != nil {
		return nil, nil, "", fmt.Errorf("init: %w", err)
	}
	// A project inside the checkout names it relatively (the pair moves
	// together); any other, by its absolute path.
	target := checkout
	if rel, err := filepath.Rel(checkout, dir); err == nil && filepath.IsLocal(rel) {
		if back, err := filepath.Rel(dir, checkout); err == nil {
			target = back
		}
	}
	target = filepath.ToSlash(target)
	var b bytes.Buffer
	fmt.Fprintf(&b, "module %s\n\n", name)
	// The checkout's Go version and requirements: every module the swarm
	// packages import is listed, so go builds offline from the module
	// cache, and go.sum is the checkout's.
	sc := bufio.NewScanner(bytes.NewReader(src))
	var reqs []string
	inReq := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "go "):
			fmt.Fprintf(&b, "%s\n\n", line)
		case line == "require (":
			inReq = true
		case inReq && line == ")":
			inReq = false
		case inReq && line != "":
			mod, _, _ := strings.Cut(line, "//")
			reqs = append(reqs, strings.TrimSpace(mod))
		case strings.HasPrefix(line, "require "):
			mod, _, _ := strings.Cut(strings.TrimPrefix(line, "require "), "//")
			reqs = append(reqs, strings.TrimSpace(mod))
		}
	}
	fmt.Fprintf(&b, "require %s v0.0.0\n\n", modulePath)
	fmt.Fprintf(&b, "// Built against a checkout of the Swarm repository. To use a published\n// version instead, drop this line and run: go get %s@VERSION && go mod tidy\n", modulePath)
	fmt.Fprintf(&b, "replace %s => %s\n\nrequire (\n", modulePath, target)
	for _, r := range reqs {
		fmt.Fprintf(&b, "\t%s // indirect\n", r)
	}
	b.WriteString(")\n")
	return b.Bytes(), sum, fmt.Sprintf("go.mod builds against the checkout %s (replace %s => %s), offline.\n", checkout, modulePath, target), nil
}

// isCheckout reports whether dir holds the go.mod of this module.
func isCheckout(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if strings.TrimSpace(line) == "module "+modulePath {
			return true
		}
	}
	return false
}

// findCheckout returns the checkout of this module that dir lies in, or "".
func findCheckout(dir string) string {
	for d := dir; d != ""; {
		if isCheckout(d) {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
	return ""
}
