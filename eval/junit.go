package eval

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// This file writes reports as JUnit XML, the test report format CI
// systems read (GitHub Actions' test reporters, GitLab, Jenkins): one
// testsuite per report (a set against one configuration), one testcase
// per case; a case that failed has a <failure> with the explanations of
// the scores that did not pass, a case that could not be run or scored an
// <error>. The elements and attributes are those of the common JUnit
// schema (the one Ant's and Maven Surefire's reports follow).

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut *junitText    `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

// junitText is an element's text as CDATA, so that a reader sees the
// lines as they are.
type junitText struct {
	Text string `xml:",cdata"`
}

// WriteJUnit writes reports as one JUnit XML document: a testsuite per
// report, named after its set and configuration, a testcase per case
// (classname the set, name the case), failures and errors with what went
// wrong, and each case's output and run id in its system-out.
func WriteJUnit(w io.Writer, reports ...*Report) error {
	doc := junitSuites{Name: "swarm eval"}
	var total time.Duration
	for _, r := range reports {
		s := junitSuite{Name: suiteName(r), Tests: len(r.Cases), Failures: r.Failed, Errors: r.Errors}
		if !r.Started.IsZero() {
			s.Timestamp = r.Started.UTC().Format("2006-01-02T15:04:05")
		}
		if !r.Started.IsZero() && r.Ended.After(r.Started) {
			total += r.Ended.Sub(r.Started)
			s.Time = seconds(r.Ended.Sub(r.Started))
		}
		s.Properties = []junitProperty{
			{"set", r.Set}, {"swarm", r.Swarm}, {"config", r.Config}, {"eval_run", r.RunID},
			{"pass_rate", strconv.FormatFloat(r.PassRate, 'f', 4, 64)},
			{"threshold", strconv.FormatFloat(effectiveThreshold(r.Threshold), 'f', 4, 64)},
			{"pass", strconv.FormatBool(r.Pass)},
		}
		var caseTime time.Duration
		for _, c := range r.Cases {
			d := time.Duration(c.Observed.Duration)
			caseTime += d
			jc := junitCase{Name: c.Case, Classname: cmp.Or(r.Set, "eval"), Time: seconds(d)}
			if out := systemOut(c); out != "" {
				jc.SystemOut = &junitText{xmlText(out)}
			}
			switch c.Verdict() {
			case "error":
				jc.Error = &junitProblem{Message: oneLine(c.Error, 200), Type: "error", Text: xmlText(problemText(c))}
			case "fail":
				jc.Failure = &junitProblem{Message: failedScores(c), Type: "failure", Text: xmlText(problemText(c))}
			}
			s.Cases = append(s.Cases, jc)
		}
		if s.Time == "" {
			s.Time = seconds(caseTime)
			total += caseTime
		}
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Suites = append(doc.Suites, s)
	}
	doc.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	return nil
}

// suiteName names a report's testsuite: its set, and the configuration
// when there is one ("support [b.yaml]").
func suiteName(r *Report) string {
	name := cmp.Or(r.Set, "eval")
	if r.Config != "" {
		name += " [" + r.Config + "]"
	}
	return name
}

// failedScores names a failed case's failing scores, for the message of
// its failure ("trajectory 0.50 < 1.00, tone 0.20 < 0.50").
func failedScores(c CaseResult) string {
	var parts []string
	for _, s := range c.Scores {
		if !s.Pass && s.Error == "" {
			parts = append(parts, fmt.Sprintf("%s %.2f < %.2f", s.Name, s.Value, s.Threshold))
		}
	}
	if len(parts) == 0 {
		return "failed"
	}
	return strings.Join(parts, ", ")
}

// problemText is what a failed or erring case got wrong: its error and
// every score that did not pass, with its explanation.
func problemText(c CaseResult) string {
	var b strings.Builder
	if c.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", c.Error)
	}
	for _, s := range c.Scores {
		switch {
		case s.Error != "":
			fmt.Fprintf(&b, "%s: error: %s\n", s.Name, s.Error)
		case !s.Pass:
			fmt.Fprintf(&b, "%s: %.2f < %.2f", s.Name, s.Value, s.Threshold)
			if s.Label != "" {
				fmt.Fprintf(&b, " (%s)", s.Label)
			}
			b.WriteString("\n")
			if s.Explanation != "" {
				fmt.Fprintf(&b, "  %s\n", indent(s.Explanation, "  "))
			}
		}
	}
	if c.Observed.Reason != "" {
		fmt.Fprintf(&b, "run %s: %s\n", c.Observed.Status, c.Observed.Reason)
	}
	return b.String()
}

// systemOut is a case's run and output, for a reader of the CI report.
func systemOut(c CaseResult) string {
	if c.Observed.RunID == "" && c.Observed.Output == "" {
		return ""
	}
	run := c.Observed.RunID
	if c.Observed.Status != "" {
		run += " (" + c.Observed.Status + ")"
	}
	out := "run: " + run + "\n"
	if c.Observed.Output != "" {
		out += "output: " + c.Observed.Output + "\n"
	}
	return out
}

// xmlText is s with the characters XML cannot hold (control characters,
// invalid UTF-8) replaced by U+FFFD: CDATA is written as it is.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r == 0xFFFE, r == 0xFFFF, r >= 0xD800 && r <= 0xDFFF, r == utf8.RuneError:
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}
