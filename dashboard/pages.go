package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/eval"
	"github.com/swarmrt/swarm/fork"
	"github.com/swarmrt/swarm/internal/jsonx"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/server"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/team"
	"github.com/swarmrt/swarm/workflow"
)

// Limits of the pages.
const (
	pageSize = 50
	// maxTree bounds the runs of a tree the run page walks.
	maxTree = 500
	// maxDepth bounds the walk up to a run's root.
	maxDepth = 64
	// maxScan bounds the runs one page of a filtered list reads (child
	// runs only, or a text search), so that it answers in bounded time
	// however rare the matches are: the page then ends early and its
	// "Older runs" link goes on from the last run read.
	maxScan = 1000
)

// row is a run in a list, with the usage of its tree.
type row struct {
	swarm.Status
	Tree model.Usage
	// Kind is "workflow" for a run of a workflow, "swarm" otherwise.
	Kind string
	// Progress is a workflow run's progress in nodes ("3/7 nodes"), ""
	// for a swarm's (which shows its turn).
	Progress string
	// Input is the start of the run's input, and ForkOf the run it was
	// forked from (runs list), both from its started record.
	Input  string
	ForkOf string
}

type runsData struct {
	Rows               []row
	Swarms             []string
	Swarm, State, Time string
	Scope, Q, After    string
	// Kind keeps only runs of workflows ("workflow") or of the other
	// swarms ("swarm").
	Kind  string
	Kinds []choice
	// Text searches the runs' inputs, results and reasons (textMatch).
	Text string
	// Deleted is the run just deleted from its page.
	Deleted string
	Next    string
	Query   template.URL // the filters as a query string, without after
	States  []string
	Times   []choice
	Scopes  []choice
	Now     time.Time
}

type choice struct{ Value, Label string }

var times = []choice{{"", "any time"}, {"1h", "last hour"}, {"24h", "last 24 hours"}, {"168h", "last 7 days"}, {"720h", "last 30 days"}}
var kinds = []choice{{"", "any kind"}, {"workflow", "workflows"}, {"swarm", "swarms"}}
var scopes = []choice{{"top", "top-level runs"}, {"all", "all runs"}, {"children", "child runs only"}}

// visibleSwarms lists the registered swarms the caller may use.
func (d *Dashboard) visibleSwarms(ctx context.Context) []swarm.Definition {
	var out []swarm.Definition
	for _, def := range d.rt.Swarms() {
		if auth.Allowed(ctx, def.ID()) {
			out = append(out, def)
		}
	}
	slices.SortFunc(out, func(a, b swarm.Definition) int { return strings.Compare(a.ID(), b.ID()) })
	return out
}

// runsFilter reads the runs list's filters from the query.
func (d *Dashboard) runsFilter(r *http.Request) (store.Filter, runsData, error) {
	q := r.URL.Query()
	data := runsData{
		Swarm: q.Get("swarm"), State: q.Get("state"), Time: q.Get("time"), Scope: q.Get("scope"), Kind: q.Get("kind"), Kinds: kinds,
		Q: strings.TrimSpace(q.Get("q")), Text: strings.TrimSpace(q.Get("text")), After: q.Get("after"), Deleted: q.Get("deleted"),
		States: []string{"running", "paused", "completed", "failed", "stopped"}, Times: times, Scopes: scopes, Now: time.Now(),
	}
	if data.Scope == "" {
		data.Scope = "top"
	}
	f := store.Filter{Swarm: data.Swarm, State: store.State(data.State), IDPrefix: data.Q}
	if f.State != "" && !f.State.Valid() {
		return f, data, fmt.Errorf("%w: state %q: want running, paused, completed, failed or stopped", swarm.ErrInvalidInput, data.State)
	}
	if data.Time != "" {
		since, err := time.ParseDuration(data.Time)
		if err != nil || since <= 0 {
			return f, data, fmt.Errorf("%w: time %q: want a duration such as 24h", swarm.ErrInvalidInput, data.Time)
		}
		f.Since = data.Now.Add(-since)
	}
	switch data.Scope {
	case "top":
		f.TopLevel = true
	case "all":
	case "children":
		// Child runs are those with a parent: there is no index for
		// "any parent", so the list is filtered after reading.
	default:
		return f, data, fmt.Errorf("%w: scope %q: want top, all or children", swarm.ErrInvalidInput, data.Scope)
	}
	if data.Kind != "" && data.Kind != "workflow" && data.Kind != "swarm" {
		return f, data, fmt.Errorf("%w: kind %q: want workflow or swarm", swarm.ErrInvalidInput, data.Kind)
	}
	if len(data.Q) > 200 || len(data.Text) > 200 || len(data.After) > 200 {
		return f, data, fmt.Errorf("%w: search or cursor longer than 200 bytes", swarm.ErrInvalidInput)
	}
	if f.Swarm != "" {
		if err := auth.Check(r.Context(), f.Swarm); err != nil {
			return f, data, err
		}
	}
	v := url.Values{}
	for k, val := range map[string]string{"swarm": data.Swarm, "state": data.State, "time": data.Time, "scope": data.Scope, "q": data.Q, "text": data.Text, "kind": data.Kind} {
		if val != "" {
			v.Set(k, val)
		}
	}
	data.Query = template.URL(v.Encode())
	return f, data, nil
}

func (d *Dashboard) runsPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	f, data, err := d.runsFilter(r)
	for _, def := range d.visibleSwarms(ctx) {
		data.Swarms = append(data.Swarms, def.ID())
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	workflows := d.workflowIDs()
	var keep func(swarm.Status) bool
	if data.Scope == "children" || data.Text != "" || data.Kind != "" {
		needle := strings.ToLower(data.Text)
		keep = func(st swarm.Status) bool {
			return (data.Scope != "children" || st.Parent != "") && (needle == "" || d.textMatch(ctx, st, needle)) &&
				(data.Kind == "" || kindOf(workflows, st) == data.Kind)
		}
	}
	statuses, next, err := d.list(ctx, f, keep, data.After)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data.Next = next
	data.Rows = make([]row, len(statuses))
	for i, st := range statuses {
		data.Rows[i] = d.withTree(ctx, st)
		data.Rows[i].Kind = kindOf(workflows, st)
		data.Rows[i].Progress = progress(ctx, d.rt, st.ID)
		if ev, ok := d.started(ctx, st.ID); ok {
			data.Rows[i].Input, data.Rows[i].ForkOf = preview(ev.Input), ev.ForkOf
		}
	}
	name := "runs"
	if r.URL.Query().Get("fragment") == "rows" {
		name = "runs-rows"
		d.renderFragment(w, r, name, data)
		return
	}
	d.render(w, r, http.StatusOK, name, data)
}

// workflowIDs returns the ids of the registered swarms that are
// workflows.
func (d *Dashboard) workflowIDs() map[string]bool {
	ids := map[string]bool{}
	for _, def := range d.rt.Swarms() {
		if _, ok := workflow.Describe(def); ok {
			ids[def.ID()] = true
		}
	}
	return ids
}

// kindOf is the kind of run st: "workflow" when its swarm is one of
// workflows, "swarm" otherwise.
func kindOf(workflows map[string]bool, st swarm.Status) string {
	if workflows[st.Swarm] {
		return "workflow"
	}
	return "swarm"
}

// list returns a page of runs after run after, keeping only those keep
// accepts (all when keep is nil). With keep, it reads at most maxScan runs:
// the page may then hold fewer than pageSize runs and still have a next.
func (d *Dashboard) list(ctx context.Context, f store.Filter, keep func(swarm.Status) bool, after string) ([]swarm.Status, string, error) {
	if keep == nil {
		return server.ListPage(ctx, d.rt, f, after, pageSize)
	}
	var out []swarm.Status
	for scanned := 0; ; {
		page, next, err := server.ListPage(ctx, d.rt, f, after, pageSize)
		if err != nil {
			return nil, "", err
		}
		for i, st := range page {
			if !keep(st) {
				continue
			}
			out = append(out, st)
			if len(out) == pageSize {
				if i == len(page)-1 && next == "" {
					return out, "", nil
				}
				return out, st.ID, nil
			}
		}
		scanned += len(page)
		if next == "" || scanned >= maxScan {
			return out, next, nil
		}
		after = next
	}
}

// textMatch reports whether run st's input, result or reason contains
// needle (lower case), ignoring case. The result and reason come from the
// run's row; the input from the first record of its journal (one read per
// run). Events further in the journal are not searched: the run page's
// search box does that within a run.
func (d *Dashboard) textMatch(ctx context.Context, st swarm.Status, needle string) bool {
	has := func(s string) bool { return strings.Contains(strings.ToLower(s), needle) }
	if has(st.ID) || has(st.Reason) || has(jsonText(st.Result)) {
		return true
	}
	ev, ok := d.started(ctx, st.ID)
	return ok && has(jsonText(ev.Input))
}

// jsonText is the text a JSON value shows: a string's value unquoted, any
// other value as written.
func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// preview is the start of a run's input as the runs list shows it: a
// string's text, other JSON as written, on one line, at most 80 characters.
func preview(input json.RawMessage) string {
	if len(input) == 0 || string(input) == "null" {
		return ""
	}
	t := strings.Join(strings.Fields(jsonText(input)), " ")
	if r := []rune(t); len(r) > 80 {
		return string(r[:79]) + "…"
	}
	return t
}

// took is how long a finished run took, from its start to its end, as the
// runs list shows it ("" for a run that has not finished).
func took(st swarm.Status) string {
	if !st.State.Terminal() {
		return ""
	}
	d := st.UpdatedAt.Sub(st.CreatedAt)
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
}

// started returns the first record of run id's journal, its started event.
func (d *Dashboard) started(ctx context.Context, id string) (swarm.Event, bool) {
	var ev swarm.Event
	recs, err := d.rt.Store().Read(ctx, id, 0, 1)
	if err != nil || len(recs) != 1 || json.Unmarshal(recs[0].Data, &ev) != nil {
		return ev, false
	}
	return ev, true
}

// withTree returns st with the usage of its tree, as every page shows it
// (swarm.Runtime.TreeUsage: the runs below included, teammates too). If
// the journals cannot be read, the row's own usage stands in, logged.
func (d *Dashboard) withTree(ctx context.Context, st swarm.Status) row {
	u, err := d.rt.TreeUsage(ctx, st.ID)
	if err != nil {
		d.log.Error("dashboard: tree usage", "run", st.ID, "err", err)
		u = st.Usage
	}
	return row{Status: st, Tree: u}
}

// progress is run id's progress in nodes when it is a workflow's, else "".
func progress(ctx context.Context, rt *swarm.Runtime, id string) string {
	if p, ok := workflow.ProgressOf(ctx, rt, id); ok {
		return p.String()
	}
	return ""
}

// node is a run in the run page's tree.
type node struct {
	swarm.Status
	Children []*node
	Current  bool
}

type runData struct {
	Run swarm.Status
	// Progress is a workflow run's progress in nodes, "" for a swarm's.
	Progress  string
	Root      *node
	Truncated bool
	TreeUsage model.Usage
	ByAgent   []agentUsage
	Input     string
	Values    string
	ForkOf    string
	ForkAt    string
	Forkable  bool
	Terminal  bool
	Pause     bool
	// Chat: the run waits for the user's next message (a conversation
	// or a team's lead): the transcript has a chat box.
	Chat bool
	// MailTeam and MailMember name the team and the member a teammate's
	// run is, when it waits for mail: its page offers to mail it.
	MailTeam, MailMember string
	// SideLater: the run's journal is longer than lazySide records, and
	// its tree and usage are left to the page's script to fetch, so that
	// the page comes at once.
	SideLater bool
	// Workflow is the Nodes tab of a workflow run (nil for other runs).
	Workflow *workflowData
}

// lazySide is the journal length from which a run's page comes without
// its tree and usage (UsageByAgent reads the whole journal: about 0.4 s
// for 100,000 records).
const lazySide = 20_000

func (r runData) title() string { return "Run " + r.Run.ID }

type agentUsage struct {
	Agent string
	model.Usage
}

func (d *Dashboard) runPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	st, err := d.authorizedRun(ctx, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := runData{Run: st, Terminal: st.State.Terminal(), Pause: st.State == swarm.StatePaused, Progress: progress(ctx, d.rt, st.ID)}
	if data.Pause && st.Reason == swarm.AwaitingMessage {
		data.Pause, data.Chat = false, true
	}
	if data.Pause && st.Reason == swarm.AwaitingMail {
		if t, err := team.Open(ctx, d.rt, st.ID); err == nil {
			data.Pause, data.MailTeam, data.MailMember = false, t.ID(), memberName(t.ID(), t.Lead(), st.ID)
		}
	}
	if data.SideLater = st.LastSeq > lazySide; !data.SideLater {
		d.side(ctx, &data)
	}
	if ev, ok := d.started(ctx, st.ID); ok {
		if string(ev.Input) != "null" { // a conversation starts with none
			data.Input = pretty(ev.Input)
		}
		if len(ev.Values) > 0 {
			b, _ := jsonx.Marshal(ev.Values)
			data.Values = pretty(b)
		}
		data.ForkOf, data.ForkAt = ev.ForkOf, ev.ForkAt
	}
	for _, def := range d.rt.Swarms() {
		if def.ID() == st.Swarm {
			data.Forkable = true
		}
	}
	if data.Workflow, _, err = d.workflow(ctx, st); err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "run", data)
}

// side fills the run tree and the usage of a run page.
func (d *Dashboard) side(ctx context.Context, data *runData) {
	data.Root, data.Truncated = d.tree(ctx, data.Run)
	if by, err := d.rt.UsageByAgent(ctx, data.Run.ID); err == nil {
		for _, a := range slices.Sorted(maps.Keys(by)) {
			data.ByAgent = append(data.ByAgent, agentUsage{a, by[a]})
			data.TreeUsage = data.TreeUsage.Add(by[a])
		}
	}
}

// sideFragment renders the run tree and the usage alone, for the run page
// to refresh them as the run goes on.
func (d *Dashboard) sideFragment(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	st, err := d.authorizedRun(ctx, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := runData{Run: st}
	d.side(ctx, &data)
	d.renderFragment(w, r, "side", data)
}

// authorizedRun returns the status of run id if the caller may use its
// swarm.
func (d *Dashboard) authorizedRun(ctx context.Context, id string) (swarm.Status, error) {
	st, err := d.rt.Status(ctx, id)
	if err != nil {
		return st, err
	}
	return st, auth.Check(ctx, st.Swarm)
}

// tree returns the tree of the runs related to st (from its root down,
// at most maxTree runs), and whether it was cut short. Runs of swarms the
// caller may not use are left out with their subtrees.
func (d *Dashboard) tree(ctx context.Context, st swarm.Status) (*node, bool) {
	root := st
	for i := 0; root.Parent != "" && i < maxDepth; i++ {
		p, err := d.rt.Status(ctx, root.Parent)
		if err != nil || !auth.Allowed(ctx, p.Swarm) {
			break
		}
		root = p
	}
	top := &node{Status: root, Current: root.ID == st.ID}
	queue := []*node{top}
	n, truncated := 1, false
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		kids, err := d.rt.List(ctx, store.Filter{Parent: cur.ID, Limit: maxTree})
		if err != nil {
			continue
		}
		slices.Reverse(kids) // oldest first, in the order they started
		for _, k := range kids {
			if !auth.Allowed(ctx, k.Swarm) {
				continue
			}
			if n >= maxTree {
				truncated = true
				break
			}
			c := &node{Status: k, Current: k.ID == st.ID}
			cur.Children = append(cur.Children, c)
			queue = append(queue, c)
			n++
		}
	}
	return top, truncated
}

func pretty(b json.RawMessage) string {
	if len(b) == 0 {
		return ""
	}
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}

type convData struct {
	Rows []row
	More bool
}

// conversationsPage lists the open conversations: paused runs awaiting a
// user message.
func (d *Dashboard) conversationsPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var data convData
	after := ""
	for range 20 {
		page, next, err := server.ListPage(ctx, d.rt, store.Filter{State: store.Paused}, after, 200)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		for _, st := range page {
			if st.Reason == swarm.AwaitingMessage {
				data.Rows = append(data.Rows, d.withTree(ctx, st))
			}
		}
		if len(data.Rows) >= pageSize {
			data.More = true
			break
		}
		if next == "" {
			break
		}
		after = next
	}
	d.render(w, r, http.StatusOK, "conversations", data)
}

type swarmInfo struct {
	ID, Description           string
	InputSchema, ResultSchema string
	TextInput                 bool
}

type swarmsData struct {
	Swarms []swarmInfo
	Agents []agentInfo
}

type agentInfo struct {
	Name, Description string
}

func (d *Dashboard) swarmsPage(w http.ResponseWriter, r *http.Request) {
	var data swarmsData
	for _, def := range d.visibleSwarms(r.Context()) {
		if def.ID() == eval.SwarmID {
			continue // eval runs start from swarm eval run and show on the Evals page
		}
		in := pretty(def.InputSchema())
		data.Swarms = append(data.Swarms, swarmInfo{ID: def.ID(), Description: def.Description(),
			InputSchema: in, ResultSchema: pretty(def.ResultSchema()), TextInput: in == "" || strings.Contains(in, `"type": "string"`) && !strings.Contains(in, `"properties"`)})
	}
	if p := auth.FromContext(r.Context()); p == nil || p.All() {
		for _, a := range d.rt.Agents() {
			data.Agents = append(data.Agents, agentInfo{a.Name, a.Description})
		}
	}
	d.render(w, r, http.StatusOK, "swarms", data)
}

type clusterData struct {
	Node    string
	Metrics []metric
	Nodes   []nodeRuns
	Leases  []swarm.Status
	More    bool
}

type metric struct {
	Name, Help string
	Value      int64
}

type nodeRuns struct {
	Owner string
	Runs  int
	This  bool
}

// clusterPage shows this node's counters (those of /metrics), the running
// runs per node of the store, and their leases.
func (d *Dashboard) clusterPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	m := d.rt.Metrics()
	data := clusterData{Node: d.rt.Owner(), Metrics: []metric{
		{"swarm_runs_driven", "Runs driven by this node now", m.RunsDriven},
		{"swarm_runs_claimed_total", "Runs claimed by this node", m.RunsClaimed},
		{"swarm_lease_renewals_total", "Lease heartbeats", m.LeaseRenewals},
		{"swarm_leases_lost_total", "Leases lost", m.LeasesLost},
		{"swarm_appends_fenced_total", "Appends fenced (stale lease)", m.AppendsFenced},
		{"swarm_store_notifications_total", "Store notifications", m.Notifications},
	}}
	running, next, err := server.ListPage(ctx, d.rt, store.Filter{State: store.Running}, "", 500)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data.More = next != ""
	per := map[string]int{}
	for _, st := range running {
		per[st.Owner]++
	}
	for _, o := range slices.Sorted(maps.Keys(per)) {
		data.Nodes = append(data.Nodes, nodeRuns{Owner: o, Runs: per[o], This: o == data.Node})
	}
	data.Leases = running
	d.render(w, r, http.StatusOK, "cluster", data)
}

// The actions. Each answers with a redirect to the page of a run (POST,
// redirect, GET), so a reload does not send the form again.

// onRun runs an action on the run named in the path, if the caller may use
// its swarm, and redirects to the run whose id do returns.
func (d *Dashboard) onRun(w http.ResponseWriter, r *http.Request, do func(ctx context.Context, st swarm.Status) (string, error)) {
	ctx := r.Context()
	st, err := d.authorizedRun(ctx, r.PathValue("id"))
	var id string
	if err == nil {
		id, err = do(ctx, st)
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/ui/runs/"+url.PathEscape(id), http.StatusSeeOther)
}

func (d *Dashboard) resume(w http.ResponseWriter, r *http.Request) {
	d.onRun(w, r, func(ctx context.Context, st swarm.Status) (string, error) {
		var opts []swarm.ResumeOption
		if v := r.PostFormValue("pause"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return "", fmt.Errorf("%w: pause %q is not a sequence number", swarm.ErrInvalidInput, v)
			}
			opts = append(opts, swarm.AtPause(n))
		}
		return st.ID, d.rt.Resume(ctx, st.ID, r.PostFormValue("message"), opts...)
	})
}

func (d *Dashboard) stop(w http.ResponseWriter, r *http.Request) {
	d.onRun(w, r, func(ctx context.Context, st swarm.Status) (string, error) {
		return st.ID, d.rt.Stop(ctx, st.ID, d.reason(ctx, r, "stopped from the dashboard"))
	})
}

// delete deletes a finished top-level run with the runs below it, and goes
// to the runs list.
func (d *Dashboard) delete(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	st, err := d.authorizedRun(ctx, r.PathValue("id"))
	if err == nil {
		_, err = d.rt.Delete(ctx, st.ID)
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/ui/?deleted="+url.QueryEscape(st.ID), http.StatusSeeOther)
}

func (d *Dashboard) fork(w http.ResponseWriter, r *http.Request) {
	d.onRun(w, r, func(ctx context.Context, st swarm.Status) (string, error) {
		var opts []fork.Option
		if in := strings.TrimSpace(r.PostFormValue("input")); in != "" {
			opts = append(opts, fork.Input(json.RawMessage(in)))
		}
		if v := strings.TrimSpace(r.PostFormValue("values")); v != "" {
			var values map[string]any
			if err := json.Unmarshal([]byte(v), &values); err != nil {
				return "", fmt.Errorf("%w: values: want a JSON object: %w", swarm.ErrInvalidInput, err)
			}
			opts = append(opts, fork.Values(values))
		}
		if r.PostFormValue("edit") != "" {
			// A browser sends a textarea's line breaks as CRLF.
			out := strings.ReplaceAll(r.PostFormValue("edit_output"), "\r\n", "\n")
			opts = append(opts, fork.Edits(fork.Edit{Key: strings.TrimSpace(r.PostFormValue("edit_key")), Output: out}))
		}
		return d.rt.Fork(ctx, st.ID, strings.TrimSpace(r.PostFormValue("at")), opts...)
	})
}

func (d *Dashboard) start(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("swarm")
	in := strings.TrimSpace(r.PostFormValue("input"))
	var input json.RawMessage
	switch {
	case in == "":
		input = json.RawMessage("null")
	case r.PostFormValue("as") == "text" || !json.Valid([]byte(in)):
		input, _ = json.Marshal(in)
	default:
		input = json.RawMessage(in)
	}
	runID, err := "", auth.Check(ctx, id)
	if err == nil {
		runID, err = d.rt.Start(ctx, id, input)
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/ui/runs/"+url.PathEscape(runID), http.StatusSeeOther)
}

func (d *Dashboard) renderFragment(w http.ResponseWriter, r *http.Request, name string, data any) {
	t := d.pages["fragments"]
	s := sessionOf(r.Context())
	f := frame{CSRF: d.csrfToken(s), Content: data}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := t.ExecuteTemplate(w, name, f); err != nil {
		d.log.Error("dashboard: render fragment", "name", name, "err", err)
	}
}

// parseTemplates parses each page together with the layout and the shared
// fragments.
func (d *Dashboard) parseTemplates() error {
	funcs := template.FuncMap{
		"age":      age,
		"ago":      func(t time.Time) string { return age(t) + " ago" },
		"stamp":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"iso":      func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
		"tokens":   func(u model.Usage) string { return count(u.InputTokens + u.OutputTokens) },
		"cost":     cost,
		"count":    count,
		"short":    short,
		"took":     took,
		"clock":    func(t time.Time) string { return t.UTC().Format("Jan 2 15:04:05") },
		"terminal": func(s swarm.State) bool { return s.Terminal() },
		"path":     url.PathEscape,
		"wfclass":  func(state string) string { return strings.ReplaceAll(state, " ", "-") },
	}
	maps.Copy(funcs, evalFuncs)
	d.pages = map[string]*template.Template{}
	base, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/fragments.html")
	if err != nil {
		return fmt.Errorf("dashboard: templates: %w", err)
	}
	d.pages["fragments"] = base
	for _, name := range []string{"login", "runs", "run", "conversations", "swarms", "cluster", "error", "teams", "team", "network", "memory", "bank", "evals", "eval", "evalcompare"} {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return fmt.Errorf("dashboard: template %s: %w", name, err)
		}
		d.pages[name] = t
	}
	return nil
}

// age is a short duration since t: 12s, 4m, 3h, 2d.
func age(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(int(d.Seconds()), 0))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func count(n int64) string {
	switch {
	case n >= 10_000_000:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	case n >= 1_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return strconv.FormatInt(n, 10)
}

func cost(u model.Usage) string {
	if u.Cost == 0 {
		return "–"
	}
	if u.Cost < 0.01 {
		return fmt.Sprintf("$%.4f", u.Cost)
	}
	return fmt.Sprintf("$%.2f", u.Cost)
}

// short is a run id cut to fit a table cell.
func short(id string) string {
	r := []rune(id)
	if len(r) <= 24 {
		return id
	}
	// The middle goes: ids that differ (a team's members, run_…~alice and
	// run_…~bob; a run and its children) differ at their ends.
	return string(r[:12]) + "…" + string(r[len(r)-11:])
}
