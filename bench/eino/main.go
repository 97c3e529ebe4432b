// Command eino runs the peer benchmark's workload on CloudWeGo Eino (ADK),
// for bench: an orchestrator ChatModelAgent calls a specialist agent wrapped
// as a tool (adk.NewAgentTool) once, then answers (three model calls per
// run), through eino-ext's OpenAI chat model against the benchmark's fake
// server. Eino keeps nothing durable.
//
// It is its own Go module so that the project's module does not depend on
// Eino. Flags and output follow bench's driver protocol: -warm runs one
// after another, then -runs runs (all at once with -concurrent), then one
// JSON line with the CPU and wall time of the measured runs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
)

// The workload's prompts, the same in every driver.
const (
	orchestratorPrompt = "You are the orchestrator. Delegate the user's question to the specialist, then answer the user with the specialist's answer."
	specialistPrompt   = "You are the specialist. Answer the question in one sentence."
	specialistDesc     = "A specialist who answers questions."
	question           = "What is the answer to the ultimate question?"
)

type result struct {
	Runs   int   `json:"runs"`
	CPUNs  int64 `json:"cpu_ns"`
	WallNs int64 `json:"wall_ns"`
}

func main() {
	url := flag.String("url", "", "base URL of the fake model server")
	_ = flag.String("store", "", "ignored: Eino keeps nothing durable")
	runs := flag.Int("runs", 100, "measured runs")
	warm := flag.Int("warm", 10, "warm-up runs before measuring")
	concurrent := flag.Bool("concurrent", false, "start the measured runs all at once")
	flag.Parse()
	if err := run(*url, *runs, *warm, *concurrent); err != nil {
		fmt.Fprintln(os.Stderr, "eino driver:", err)
		os.Exit(1)
	}
}

func run(url string, runs, warm int, concurrent bool) error {
	if url == "" || runs <= 0 || warm < 0 {
		return errors.New("need -url, -runs > 0 and -warm >= 0")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cm, err := openai.NewChatModel(ctx, &openai.ChatModelConfig{BaseURL: url, APIKey: "bench", Model: "gpt-4.1-mini"})
	if err != nil {
		return err
	}
	specialist, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name: "specialist", Description: specialistDesc, Instruction: specialistPrompt, Model: cm,
	})
	if err != nil {
		return err
	}
	orchestrator, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name: "orchestrator", Description: "Answers questions with a specialist's help", Instruction: orchestratorPrompt, Model: cm,
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: []tool.BaseTool{adk.NewAgentTool(ctx, specialist)}}},
	})
	if err != nil {
		return err
	}
	runner := adk.NewRunner(ctx, adk.RunnerConfig{Agent: orchestrator})
	one := func() error {
		it := runner.Query(ctx, question)
		answer := ""
		for {
			ev, ok := it.Next()
			if !ok {
				break
			}
			if ev.Err != nil {
				return ev.Err
			}
			if ev.Output != nil && ev.Output.MessageOutput != nil && ev.AgentName == "orchestrator" {
				msg, err := ev.Output.MessageOutput.GetMessage()
				if err != nil && !errors.Is(err, io.EOF) {
					return err
				}
				if msg != nil && len(msg.ToolCalls) == 0 {
					answer = msg.Content
				}
			}
		}
		if !strings.Contains(answer, "42") {
			return fmt.Errorf("no final answer (got %q)", answer)
		}
		return nil
	}
	for range warm {
		if err := one(); err != nil {
			return err
		}
	}
	cpu0, start := cpuTime(), time.Now()
	if concurrent {
		var wg sync.WaitGroup
		errs := make(chan error, runs)
		for range runs {
			wg.Go(func() {
				if err := one(); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
	} else {
		for range runs {
			if err := one(); err != nil {
				return err
			}
		}
	}
	out := result{Runs: runs, WallNs: int64(time.Since(start)), CPUNs: int64(cpuTime() - cpu0)}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
