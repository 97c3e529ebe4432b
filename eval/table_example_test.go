package eval_test

import (
	"os"
	"time"

	"github.com/swarmrt/swarm/eval"
)

// exampleReport is a report as an eval run returns it: one case passed,
// one failed its trajectory.
func exampleReport() *eval.Report {
	return &eval.Report{
		Set: "support", Swarm: "desk", Config: "swarm.yaml", RunID: "eval-1",
		Cases: []eval.CaseResult{
			{Case: "refund", Pass: true, Observed: eval.Observed{RunID: "eval-1.case.refund", ModelCalls: 3, Tokens: 277, Duration: eval.Duration(88 * time.Millisecond)},
				Scores: []eval.Score{{Name: "trajectory", Value: 1, Threshold: 1, Pass: true}}},
			{Case: "cancel", Observed: eval.Observed{RunID: "eval-1.case.cancel", ModelCalls: 2, Tokens: 98, Duration: eval.Duration(81 * time.Millisecond)},
				Scores: []eval.Score{{Name: "trajectory", Value: 0.5, Threshold: 1, Explanation: "missing: lookup_order"}}},
		},
		Passed: 1, Failed: 1, PassRate: 0.5, Threshold: 0.5, Pass: true, ModelCalls: 5, Tokens: 375,
	}
}

// A report as a table: a row per case, then what failed and why, then
// the summary.
func ExampleWriteTable() {
	_ = eval.WriteTable(os.Stdout, exampleReport())
	// Output:
	// CASE    RESULT  SCORES            CALLS  TOKENS  TIME
	// refund  PASS    trajectory=1.00   3      277     88ms
	// cancel  FAIL    trajectory=0.50✗  2      98      81ms
	//
	// cancel (fail, run eval-1.case.cancel):
	//   trajectory 0.50 < 1.00: missing: lookup_order
	//
	// PASS: support against swarm.yaml: 1/2 passed (50%, threshold 50%), 1 failed, 0 errors; 5 model calls, 375 tokens (eval run eval-1)
}

// A report as JUnit XML, for CI: a testsuite per report, a testcase per
// case, a failure with the explanations.
func ExampleWriteJUnit() {
	r := exampleReport()
	r.Cases = r.Cases[1:]
	_ = eval.WriteJUnit(os.Stdout, r)
	// Output:
	// <?xml version="1.0" encoding="UTF-8"?>
	// <testsuites name="swarm eval" tests="1" failures="1" errors="0" time="0.081">
	//   <testsuite name="support [swarm.yaml]" tests="1" failures="1" errors="0" skipped="0" time="0.081">
	//     <properties>
	//       <property name="set" value="support"></property>
	//       <property name="swarm" value="desk"></property>
	//       <property name="config" value="swarm.yaml"></property>
	//       <property name="eval_run" value="eval-1"></property>
	//       <property name="pass_rate" value="0.5000"></property>
	//       <property name="threshold" value="0.5000"></property>
	//       <property name="pass" value="true"></property>
	//     </properties>
	//     <testcase name="cancel" classname="support" time="0.081">
	//       <failure message="trajectory 0.50 &lt; 1.00" type="failure"><![CDATA[trajectory: 0.50 < 1.00
	//   missing: lookup_order
	// ]]></failure>
	//       <system-out><![CDATA[run: eval-1.case.cancel
	// ]]></system-out>
	//     </testcase>
	//   </testsuite>
	// </testsuites>
}
