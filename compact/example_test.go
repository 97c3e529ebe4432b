package compact_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/model/scripted"
)

// A swarm whose history outgrows a small window has it summarized: the
// summary is a model call (by "<agent>_compact") journaled as a compacted
// event, and the requests stay within the window.
func ExampleConfig() {
	pad := strings.Repeat("data ", 100)
	var steps []scripted.Step
	for range 6 {
		steps = append(steps, scripted.Tools(scripted.CallTool("fetch", nil)))
	}
	steps = append(steps, scripted.Text("report written"))
	m := scripted.New(scripted.Script{
		"reporter":         steps,
		"reporter_compact": {scripted.Text("Fetched several pages of data.")},
	})
	fetch := swarm.NewTool("fetch", "Fetches a page", func(context.Context, struct{}) (string, error) { return pad, nil })
	reporter := swarm.Define[string, string]("reporter", "Writes reports", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{fetch}, Compaction: &compact.Config{Window: 1000, Trigger: 0.6, Keep: 1}}
	})
	rt, _ := swarm.New(swarm.Config{Model: m})
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, run, err := reporter.Run(ctx, rt, "write a report")
	if err != nil {
		fmt.Println(err)
		return
	}
	for ev := range run.Events(ctx, 0) {
		if ev.Type == swarm.EventCompacted {
			c := ev.Compaction
			fmt.Printf("%s: messages %d-%d summarized, %d tokens became %d\n", ev.Key, c.From, c.To, c.TokensBefore, c.TokensAfter)
		}
	}
	fmt.Println(res.State(), res.(swarm.Completed[string]).Output)
	// Output:
	// t5/compact: messages 1-7 summarized, 639 tokens became 239
	// completed report written
}
