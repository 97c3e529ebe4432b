package eval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/strategy"
)

// The eval runner: a strategy on the public seam. An eval run's journal
// holds, under "case/<id>/...", each case's steps: the start of its child
// run ("start"), each message of a conversation, a team's mail or a
// simulated user ("turn/<n>", the simulator's questions under
// "user/<n>"), the observation read from the child's journal
// ("observed"), the judge's calls ("judge/..."), the scores ("result")
// and the progress event ("done"). A case whose result is journaled is
// not touched again by a replay.

// MaxParallel bounds how many cases an eval run runs at once, whatever
// the set or the options ask.
const MaxParallel = 64

// EventCaseStart is the type of the event an eval run journals when it
// has started a case's run: Target is the case, Child its run.
const EventCaseStart swarm.EventType = "eval_case_start"

// runner is the eval runner swarm's strategy.
type runner struct{ o Options }

// Definition returns the eval runner swarm with o's custom scorers, for
// a runtime's Register (Define registers it). Its input is an [Input]
// and its result a [Report], both JSON; the agents the set names as
// judges and simulated users are its agents, so that their calls are
// journaled steps of the eval run.
func Definition(o Options) swarm.Definition {
	st := &runner{o: o}
	return swarm.Define[json.RawMessage, json.RawMessage](SwarmID, "Runs an eval set against a swarm and reports its scores",
		func(raw json.RawMessage) swarm.Spec {
			spec := swarm.Spec{Strategy: strategy.Of(st), NoBuiltins: true}
			if in, err := decodeInput(raw); err == nil {
				for _, a := range agentsOf(in.Set) {
					spec.Handoffs = append(spec.Handoffs, swarm.ToAgentID(a))
				}
			}
			return spec
		}).RefuseHandoffs("an eval run is started by eval.Start, not handed a task")
}

// agentsOf lists the agents s asks (judges and simulated users), each
// once, in order.
func agentsOf(s *Set) []string {
	var out []string
	add := func(name string) {
		if name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	add(s.Judge)
	add(s.Simulator)
	for _, c := range s.Cases {
		for _, r := range c.Expect.Rubrics {
			add(r.Judge)
		}
		if c.Scenario != nil {
			add(c.Scenario.Agent)
		}
	}
	return out
}

// decodeInput reads an eval run's input.
func decodeInput(raw json.RawMessage) (*Input, error) {
	var in Input
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("eval run input: %w", err)
	}
	if in.Set == nil {
		return nil, errors.New("eval run input: no set")
	}
	return &in, nil
}

// selected returns the cases of in's set its tags select.
func selected(in *Input) []Case {
	if len(in.Tags) == 0 {
		return in.Set.Cases
	}
	var out []Case
	for _, c := range in.Set.Cases {
		if slices.ContainsFunc(c.Tags, func(t string) bool { return slices.Contains(in.Tags, t) }) {
			out = append(out, c)
		}
	}
	return out
}

// Check refuses an eval run whose set does not validate or whose swarm
// under test is not registered, before anything is journaled.
func (st *runner) Check(d *strategy.Driver) (int, error) {
	in, err := decodeInput(d.Input())
	if err != nil {
		return 0, err
	}
	if err := Validate(in.Set); err != nil {
		return 0, err
	}
	if !registered(d.Runtime(), in.Set.Swarm) {
		return 0, fmt.Errorf("%w: the swarm under test, %q, is not registered", swarm.ErrUnknownSwarm, in.Set.Swarm)
	}
	if len(selected(in)) == 0 {
		return 0, fmt.Errorf("no case of set %s has one of the tags %s", in.Set.Name, strings.Join(in.Tags, ", "))
	}
	return 0, nil
}

// registered reports whether rt has a definition id.
func registered(rt *swarm.Runtime, id string) bool {
	return slices.ContainsFunc(rt.Swarms(), func(d swarm.Definition) bool { return d.ID() == id })
}

// Drive runs the selected cases, at most the set's Parallel at once, and
// returns the report.
func (st *runner) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	in, err := decodeInput(d.Input())
	if err != nil {
		return nil, &strategy.Failure{Reason: err.Error()}
	}
	cases := selected(in)
	startedRaw, err := d.Record(ctx, "started", "eval.clock", func(context.Context) (json.RawMessage, error) {
		return json.Marshal(time.Now().UTC())
	})
	if err != nil {
		return nil, err
	}
	limit := in.Set.Parallel
	if limit <= 0 {
		limit = st.o.Parallel
	}
	if limit <= 0 {
		limit = DefaultParallel
	}
	limit = min(limit, MaxParallel)
	t := &tally{total: len(cases)}
	results := make([]CaseResult, len(cases))
	errs := d.ParallelLimit(ctx, len(cases), limit, func(ctx context.Context, i int) error {
		r, err := st.runCase(ctx, d, in.Set, cases[i])
		if err != nil {
			return err
		}
		if err := settleCase(ctx, d, r.Observed.RunID); err != nil {
			return err
		}
		results[i] = r
		p := t.add(r)
		_, err = d.RecordEvent(ctx, caseKey(r.Case, "done"), func(context.Context) (swarm.Event, error) {
			raw, err := json.Marshal(p)
			return swarm.Event{Type: EventCase, Kind: string(EventCase), Target: r.Case, Progress: raw}, err
		})
		return err
	})
	if err := firstFatal(errs); err != nil {
		return nil, err
	}
	usage, err := st.usage(ctx, d)
	if err != nil {
		return nil, err
	}
	endedRaw, err := d.Record(ctx, "ended", "eval.clock", func(context.Context) (json.RawMessage, error) {
		return json.Marshal(time.Now().UTC())
	})
	if err != nil {
		return nil, err
	}
	rep := report(in, d.RunID(), results, usage)
	_ = json.Unmarshal(startedRaw, &rep.Started)
	_ = json.Unmarshal(endedRaw, &rep.Ended)
	return json.Marshal(rep)
}

// settleCase stops case run id once its case is scored, when it still
// waits (a conversation for its next message, a run for a human): the
// eval run does not leave runs behind, and stops them itself rather than
// when it ends, which a crash in between would skip.
func settleCase(ctx context.Context, d *strategy.Driver, id string) error {
	if id == "" {
		return nil
	}
	rt := d.Runtime()
	r, err := rt.Store().Get(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil // never started
	case err != nil:
		return strategy.Interrupted(err)
	case r.State.Terminal():
		return nil
	}
	if err := rt.Stop(ctx, id, "its eval case is scored"); err != nil && !errors.Is(err, store.ErrInvalidState) && !errors.Is(err, swarm.ErrInvalidState) {
		return strategy.Interrupted(err)
	}
	return nil
}

// firstFatal returns the error among errs that ends the eval run: a
// failure that ends the run tree (a limit), else an interruption or the
// context's end. The branches return no other errors.
func firstFatal(errs []error) error {
	var first error
	for _, err := range errs {
		var f *strategy.Failure
		if errors.As(err, &f) && f.Ends() {
			return err
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// usage journals, once, what the eval run tree spent: the cases' runs,
// the judges and the simulated users.
func (st *runner) usage(ctx context.Context, d *strategy.Driver) (model.Usage, error) {
	var u model.Usage
	raw, ok, err := d.Recorded("usage")
	if err != nil {
		return u, err
	}
	if !ok {
		got, err := d.Runtime().TreeUsage(ctx, d.RunID())
		if err != nil {
			return u, strategy.Interrupted(err)
		}
		if raw, err = d.Record(ctx, "usage", "eval.usage", func(context.Context) (json.RawMessage, error) { return json.Marshal(got) }); err != nil {
			return u, err
		}
	}
	err = json.Unmarshal(raw, &u)
	return u, err
}

// tally counts finished cases for the progress events.
type tally struct {
	mu    sync.Mutex
	total int
	p     Progress
}

func (t *tally) add(r CaseResult) Progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.Done++
	t.p.Total = t.total
	switch {
	case r.Error != "":
		t.p.Errors++
	case r.Pass:
		t.p.Passed++
	default:
		t.p.Failed++
	}
	p := t.p
	p.Case, p.Pass = r.Case, r.Pass
	return p
}

// caseKey is the step key of step of case id.
func caseKey(id, step string) string { return "case/" + id + "/" + step }

// caseOutcome is what the result record of a case holds (the
// observation has a record of its own).
type caseOutcome struct {
	Scores []Score `json:"scores"`
	Pass   bool    `json:"pass"`
	Error  string  `json:"error,omitempty"`
}

// runCase runs case c as a child run, observes it and scores it; a case
// whose result is journaled returns it at once. Its error is one that
// ends the eval run (an interruption, a limit of the run tree); what goes
// wrong with the case itself is the case's Error.
func (st *runner) runCase(ctx context.Context, d *strategy.Driver, s *Set, c Case) (CaseResult, error) {
	res := CaseResult{Case: c.ID, Tags: c.Tags, Input: firstInput(c)}
	if raw, ok, err := d.Recorded(caseKey(c.ID, "result")); err != nil || ok {
		if err != nil {
			return res, err
		}
		obs, _, err := recordedObserved(d, c.ID)
		if err != nil {
			return res, err
		}
		return withOutcome(res, obs, raw)
	}
	var out caseOutcome
	obs, err := st.play(ctx, d, s, c)
	res.Observed = obs
	switch {
	case fatal(ctx, err):
		return res, interruption(err)
	case err != nil:
		out.Error = err.Error()
	default:
		scores, err := scoreCase(ctx, judge{d: d, s: s, id: c.ID}, s, c, obs, st.o.Scorers)
		if fatal(ctx, err) {
			return res, interruption(err)
		}
		out.Scores = scores
		if err != nil {
			out.Error = err.Error()
		}
		out.Pass = err == nil
		for _, sc := range scores {
			if sc.Error != "" && out.Error == "" {
				out.Error = "score " + sc.Name + ": " + sc.Error
			}
			out.Pass = out.Pass && sc.Pass && sc.Error == ""
		}
	}
	if out.Error != "" {
		out.Pass = false
	}
	raw, err := d.Record(ctx, caseKey(c.ID, "result"), "eval.result", func(context.Context) (json.RawMessage, error) {
		return json.Marshal(out)
	})
	if err != nil {
		return res, err
	}
	return withOutcome(res, obs, raw)
}

// withOutcome completes res with its observation and its journaled
// outcome.
func withOutcome(res CaseResult, obs Observed, raw json.RawMessage) (CaseResult, error) {
	var out caseOutcome
	if err := json.Unmarshal(raw, &out); err != nil {
		return res, fmt.Errorf("case %s: journaled result: %w", res.Case, err)
	}
	res.Observed, res.Scores, res.Pass, res.Error = obs, out.Scores, out.Pass, out.Error
	if res.Scores == nil {
		res.Scores = []Score{}
	}
	return res, nil
}

// fatal reports whether err ends the eval run rather than the case: the
// context's end, an interruption (a journal or a store that failed), or a
// failure that ends the run tree (a limit, a budget). Anything else (a
// step's failure, a scorer's error) is the case's.
func fatal(ctx context.Context, err error) bool {
	if err == nil {
		return false
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, strategy.ErrAwaiting) || seam.IsInterrupted(err) {
		return true
	}
	var f *strategy.Failure
	return errors.As(err, &f) && f.Ends()
}

// outside classifies an error of the runtime's API that the runner calls
// outside the journal (Settle, History, Say, StartChildren): a mistake of
// the case's run (its state, its input, an unknown swarm) is the case's
// error, anything else a failure of the store, which interrupts the eval
// run.
func outside(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, swarm.ErrInvalid), errors.Is(err, swarm.ErrInvalidInput), errors.Is(err, swarm.ErrUnknownSwarm),
		errors.Is(err, swarm.ErrUnknownAgent), errors.Is(err, swarm.ErrInvalidState), errors.Is(err, swarm.ErrTurnFailed),
		errors.Is(err, swarm.ErrDuplicate), errors.Is(err, store.ErrInvalidState):
		return caseErrorf("%v", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return strategy.Interrupted(err)
}

// interruption returns err, an error that ends the eval run, as the
// strategy returns it: a failure that ends the run tree, a wait or the
// context's end as they are, anything else (a store that failed) as an
// interruption, for the run to continue on a later drive.
func interruption(err error) error {
	var f *strategy.Failure
	if errors.As(err, &f) || errors.Is(err, strategy.ErrAwaiting) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return strategy.Interrupted(err)
}

// caseError is a mistake of the case (its run failed to start, a
// conversation ended early): the case's error, not the eval run's.
type caseError struct{ msg string }

func (e *caseError) Error() string { return e.msg }

func caseErrorf(format string, args ...any) error {
	return &caseError{msg: fmt.Sprintf(format, args...)}
}

// firstInput is c's input for a reader: its input, or its first message.
func firstInput(c Case) string {
	switch {
	case c.Input != "":
		return c.Input
	case len(c.Turns) > 0:
		return c.Turns[0]
	case len(c.Mail) > 0:
		return c.Mail[0]
	case c.Scenario != nil && c.Scenario.First != "":
		return c.Scenario.First
	case c.Scenario != nil:
		return c.Scenario.Goal
	}
	return ""
}

// judge asks the judges of one case as journaled steps of the eval run,
// under "case/<id>/judge/<key>".
type judge struct {
	d  *strategy.Driver
	s  *Set
	id string
}

// Ask implements Judge.
func (j judge) Ask(ctx context.Context, key, agent string, msgs []model.Message) (string, error) {
	if agent == "" {
		agent = j.s.Judge
	}
	if agent == "" {
		return "", caseErrorf("no judge agent (set the set's judge: or the rubric's)")
	}
	return j.d.Ask(ctx, caseKey(j.id, "judge/"+key), strategy.AskOptions{Agent: agent}, msgs)
}

// childID is the run id of case id's run in eval run parent: the case's
// id when it is fit for one, else its digest.
func childID(parent, id string) string {
	if plainID.MatchString(id) {
		return parent + ".case." + id
	}
	sum := sha256.Sum256([]byte(id))
	return parent + ".case." + hex.EncodeToString(sum[:6])
}

var plainID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// play starts case c's run as a child of the eval run, gives it the
// case's messages (or a simulated user's), waits for it to settle and
// returns what it did, journaled under "case/<id>/observed".
func (st *runner) play(ctx context.Context, d *strategy.Driver, s *Set, c Case) (Observed, error) {
	id := childID(d.RunID(), c.ID)
	if obs, ok, err := recordedObserved(d, c.ID); ok || err != nil {
		return obs, err
	}
	rt := d.Runtime()
	if _, started, err := d.RecordedEvent(caseKey(c.ID, "start")); err != nil {
		return Observed{RunID: id}, err
	} else if !started {
		input, err := childInput(rt, s.Swarm, c)
		if err != nil {
			return Observed{RunID: id}, caseErrorf("%v", err)
		}
		if err := outside(d.StartChildren(ctx, strategy.Child{ID: id, Swarm: s.Swarm, Input: input, Values: c.Values})); err != nil {
			if fatal(ctx, err) {
				return Observed{RunID: id}, err
			}
			return Observed{RunID: id}, caseErrorf("cannot start its run: %v", err)
		}
		// An event of the runner's own type: a recovered eval run knows
		// from it that it has child runs to stop when it ends.
		if _, err := d.RecordEvent(ctx, caseKey(c.ID, "start"), func(context.Context) (swarm.Event, error) {
			return swarm.Event{Type: EventCaseStart, Kind: string(EventCaseStart), Target: c.ID, Child: id}, nil
		}); err != nil {
			return Observed{RunID: id}, err
		}
	}
	pl := &player{d: d, rt: rt, s: s, c: c, id: id}
	goalMissed := ""
	var err error
	switch {
	case len(c.Turns) > 0:
		err = pl.messages(ctx, c.Turns)
	case len(c.Mail) > 0:
		err = pl.messages(ctx, c.Mail)
	case c.Scenario != nil:
		goalMissed, err = pl.simulate(ctx, c.Scenario)
	}
	if err != nil && fatal(ctx, err) {
		return Observed{RunID: id}, err
	}
	obs, oerr := observe(ctx, rt, id, c.Input == "")
	if oerr != nil {
		return Observed{RunID: id}, strategy.Interrupted(oerr)
	}
	switch {
	case err != nil:
		obs.Status, obs.Reason = string(swarm.StateFailed), err.Error()
	case goalMissed != "" && obs.Status == string(swarm.StateCompleted):
		obs.Status, obs.Reason = string(swarm.StateFailed), goalMissed
	}
	raw, err := d.Record(ctx, caseKey(c.ID, "observed"), "eval.observed", func(context.Context) (json.RawMessage, error) {
		return json.Marshal(obs)
	})
	if err != nil {
		return obs, err
	}
	var got Observed
	if err := json.Unmarshal(raw, &got); err != nil {
		return obs, fmt.Errorf("case %s: journaled observation: %w", c.ID, err)
	}
	return got, nil
}

// recordedObserved returns the observation of case id the journal holds.
func recordedObserved(d *strategy.Driver, id string) (Observed, bool, error) {
	var obs Observed
	raw, ok, err := d.Recorded(caseKey(id, "observed"))
	if err != nil || !ok {
		return obs, ok, err
	}
	if err := json.Unmarshal(raw, &obs); err != nil {
		return obs, true, fmt.Errorf("case %s: journaled observation: %w", id, err)
	}
	return obs, true, nil
}

// childInput is the input of case c's run of swarm id: a conversation or
// a team starts with none (its messages follow), a swarm whose input is
// text gets c.Input as a string, another swarm c.Input as JSON.
func childInput(rt *swarm.Runtime, id string, c Case) (json.RawMessage, error) {
	if c.Input == "" {
		return json.RawMessage("null"), nil
	}
	i := slices.IndexFunc(rt.Swarms(), func(d swarm.Definition) bool { return d.ID() == id })
	if i < 0 {
		return nil, fmt.Errorf("%w: the swarm under test, %q, is not registered", swarm.ErrUnknownSwarm, id)
	}
	var schema struct {
		Type any `json:"type"`
	}
	_ = json.Unmarshal(rt.Swarms()[i].InputSchema(), &schema)
	if schema.Type == "string" || !json.Valid([]byte(c.Input)) {
		return json.Marshal(c.Input)
	}
	return json.RawMessage(c.Input), nil
}

// player sends a case's messages to its run.
type player struct {
	d  *strategy.Driver
	rt *swarm.Runtime
	s  *Set
	c  Case
	id string
}

// turn is a message sent and the run's answer, as journaled.
type turn struct {
	User  string `json:"user"`
	Reply string `json:"reply"`
	Agent string `json:"agent,omitempty"`
}

// messages sends msgs, one after the other.
func (p *player) messages(ctx context.Context, msgs []string) error {
	for i, m := range msgs {
		if _, err := p.send(ctx, i+1, m); err != nil {
			return err
		}
	}
	return nil
}

// send sends message n (1-based) of the case, once, and journals the
// answer under "case/<id>/turn/<n>". A message that a process sent before
// it died is not sent again: its answer is read from the run's journal.
func (p *player) send(ctx context.Context, n int, msg string) (turn, error) {
	key := caseKey(p.c.ID, "turn/"+strconv.Itoa(n))
	var t turn
	raw, ok, err := p.d.Recorded(key)
	if err != nil {
		return t, err
	}
	if !ok {
		ev, err := p.say(ctx, n, msg)
		if err != nil {
			return t, err
		}
		if ev.IsError {
			return t, caseErrorf("message %d got no answer: %s", n, ev.Reason)
		}
		t = turn{User: msg, Reply: ev.Text, Agent: ev.Agent}
		if raw, err = p.d.Record(ctx, key, "eval.turn", func(context.Context) (json.RawMessage, error) { return json.Marshal(t) }); err != nil {
			return t, err
		}
	}
	err = json.Unmarshal(raw, &t)
	return t, err
}

// say sends message n to the case's run unless it was sent, and returns
// the run's reply to it.
func (p *player) say(ctx context.Context, n int, msg string) (*swarm.Event, error) {
	if ev, err := p.reply(ctx, n); ev != nil || err != nil {
		return ev, err
	}
	st, err := p.rt.Settle(ctx, p.id)
	if err != nil {
		return nil, outside(err)
	}
	if st.State != swarm.StatePaused {
		return nil, caseErrorf("the run is %s (%s) before message %d", st.State, st.Reason, n)
	}
	if sent, err := p.sent(ctx); err != nil {
		return nil, err
	} else if sent < n-1 {
		return nil, caseErrorf("the run took %d messages before message %d", sent, n)
	} else if sent == n-1 {
		ev, st, err := p.rt.Say(ctx, p.id, msg)
		switch {
		case errors.Is(err, swarm.ErrTurnFailed) && ev != nil:
			return ev, nil
		case err != nil:
			return nil, outside(err)
		case ev == nil:
			return nil, caseErrorf("message %d: the run paused for a human instead of answering (%s)", n, st.Reason)
		}
		return ev, nil
	}
	ev, err := p.reply(ctx, n)
	if err == nil && ev == nil {
		err = caseErrorf("message %d has no answer in the run's journal", n)
	}
	return ev, err
}

// reply returns the run's reply to message n once it has settled, nil
// when it has none.
func (p *player) reply(ctx context.Context, n int) (*swarm.Event, error) {
	if _, err := p.rt.Settle(ctx, p.id); err != nil {
		return nil, outside(err)
	}
	evs, err := p.rt.History(ctx, p.id, 0)
	if err != nil {
		return nil, outside(err)
	}
	key := "m" + strconv.Itoa(n) + "/reply"
	for i := range evs {
		if evs[i].Key == key {
			return &evs[i], nil
		}
	}
	return nil, nil
}

// sent counts the user messages the case's run took.
func (p *player) sent(ctx context.Context) (int, error) {
	evs, err := p.rt.History(ctx, p.id, 0)
	if err != nil {
		return 0, outside(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == swarm.EventResumed && isMessageKey(ev.Key) {
			n++
		}
	}
	return n, nil
}

// isMessageKey reports whether key is that of a user message's record
// ("m<n>/await/resumed").
func isMessageKey(key string) bool {
	rest, ok := strings.CutPrefix(key, "m")
	if !ok {
		return false
	}
	num, tail, ok := strings.Cut(rest, "/")
	if _, err := strconv.Atoi(num); err != nil || !ok {
		return false
	}
	return tail == "await/resumed"
}

// goalMet is what a simulated user answers once its goal is met.
const goalMet = "GOAL MET"

// simulate plays the user of scenario sc: the simulator agent is asked,
// as a journaled step, for each next message from the scenario and the
// conversation so far, at most MaxTurns messages, until it answers that
// the goal is met. It returns why the goal was not met ("" when it was).
func (p *player) simulate(ctx context.Context, sc *Scenario) (string, error) {
	maxTurns := sc.MaxTurns
	if maxTurns <= 0 {
		maxTurns = DefaultScenarioTurns
	}
	agent := sc.Agent
	if agent == "" {
		agent = p.s.Simulator
	}
	system := simulatorPrompt(sc)
	var talk []turn
	for n := 1; n <= maxTurns; n++ {
		msg := ""
		if n == 1 && sc.First != "" {
			msg = sc.First
		} else {
			ans, err := p.d.Ask(ctx, caseKey(p.c.ID, "user/"+strconv.Itoa(n)), strategy.AskOptions{Agent: agent, System: system}, simulatorMessages(sc, talk))
			if err != nil {
				return "", err
			}
			ans = strings.TrimSpace(ans)
			if strings.HasPrefix(strings.ToUpper(ans), goalMet) {
				return "", nil
			}
			if ans == "" {
				return "", caseErrorf("the simulated user (%s) gave an empty message %d", agent, n)
			}
			msg = ans
		}
		t, err := p.send(ctx, n, msg)
		if err != nil {
			return "", err
		}
		talk = append(talk, t)
	}
	// The last message's answer may have met the goal: ask once more.
	ans, err := p.d.Ask(ctx, caseKey(p.c.ID, "user/"+strconv.Itoa(maxTurns+1)), strategy.AskOptions{Agent: agent, System: system}, simulatorMessages(sc, talk))
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(ans)), goalMet) {
		return "", nil
	}
	return fmt.Sprintf("the simulated user's goal was not met within max_turns (%d messages)", maxTurns), nil
}

// simulatorPrompt tells the simulator whom it plays.
func simulatorPrompt(sc *Scenario) string {
	var b strings.Builder
	b.WriteString("You play a user talking to an assistant, to test it. Write only the user's next message, in the user's words.\n")
	b.WriteString("The user's goal: " + sc.Goal + "\n")
	if sc.Persona != "" {
		b.WriteString("Who the user is and how they talk: " + sc.Persona + "\n")
	}
	b.WriteString("When the goal is met, answer exactly " + goalMet + " and nothing else.")
	return b.String()
}

// simulatorMessages is the conversation as the simulator sees it: the
// assistant's replies are what it is told, its own messages what it said.
func simulatorMessages(sc *Scenario, talk []turn) []model.Message {
	msgs := []model.Message{{Role: model.RoleUser, Content: "Start the conversation: write the user's first message."}}
	for _, t := range talk {
		msgs = append(msgs, model.Message{Role: model.RoleAssistant, Content: t.User}, model.Message{Role: model.RoleUser, Content: t.Reply})
	}
	return msgs
}

// report makes the report of eval run id of in from its cases' results
// and what the tree spent.
func report(in *Input, id string, results []CaseResult, u model.Usage) *Report {
	r := &Report{Set: in.Set.Name, Swarm: in.Set.Swarm, Config: in.Config, RunID: id, Cases: results,
		Threshold: in.Set.Threshold, ModelCalls: int(u.Calls), Tokens: int(u.InputTokens + u.OutputTokens), Cost: u.Cost}
	if r.Threshold == 0 {
		r.Threshold = 1
	}
	sums, counts := map[string]float64{}, map[string]int{}
	for _, c := range results {
		switch {
		case c.Error != "":
			r.Errors++
		case c.Pass:
			r.Passed++
		default:
			r.Failed++
		}
		for _, sc := range c.Scores {
			if sc.Error == "" {
				sums[sc.Name] += sc.Value
				counts[sc.Name]++
			}
		}
	}
	if len(results) > 0 {
		r.PassRate = float64(r.Passed) / float64(len(results))
	}
	// A pass rate is a ratio of counts: compare it without the rounding
	// of its division.
	r.Pass = len(results) > 0 && float64(r.Passed) >= r.Threshold*float64(len(results))-1e-9
	if len(sums) > 0 {
		r.Scores = map[string]float64{}
		for name, sum := range sums {
			r.Scores[name] = sum / float64(counts[name])
		}
	}
	return r
}
