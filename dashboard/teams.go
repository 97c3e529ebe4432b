package dashboard

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/server"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/team"
)

// The teams pages: the team runs this token may see, and one team's roster
// (with each member's lifecycle state and unread mail), the whole mail
// history, the task board and protocol requests, read from the store like
// the HTTP API's team routes; and the team's actions: mail a member (or
// every member), add a task, shut a teammate down.

type teamsData struct {
	Rows []row
	More bool
}

func (d *Dashboard) teamsPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var data teamsData
	for _, def := range d.visibleSwarms(ctx) {
		if _, ok := def.(*team.Team); !ok {
			continue
		}
		page, next, err := server.ListPage(ctx, d.rt, store.Filter{Swarm: def.ID(), TopLevel: true}, "", pageSize)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		for _, st := range page {
			data.Rows = append(data.Rows, d.withTree(ctx, st))
		}
		data.More = data.More || next != ""
	}
	d.render(w, r, http.StatusOK, "teams", data)
}

type teamData struct {
	ID         string
	Lead       string
	Status     swarm.Status
	Members    []team.MemberStatus
	Recipients []string // the members that can be mailed
	Mail       []mailRow
	MailMore   bool
	Tasks      []team.Task
	Requests   []team.ProtocolRequest
}

func (t teamData) title() string { return "Team " + t.ID }

// mailRow is a mail of the team's history, with its recipients: a
// broadcast is one row.
type mailRow struct {
	store.Mail
	To     []string
	Unread []string // the recipients that have not read it yet
}

// maxMailRows bounds the mail history the team page shows (the newest).
const maxMailRows = 500

func (d *Dashboard) teamPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	st, err := d.authorizedRun(ctx, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	t, err := team.Open(ctx, d.rt, st.ID)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := teamData{ID: t.ID(), Lead: t.Lead(), Status: st}
	if data.Members, err = t.Roster(ctx); err == nil {
		data.Recipients = mailRecipients(data.Members)
		if data.Mail, err = d.mailHistory(ctx, t, data.Members); err == nil {
			if len(data.Mail) > maxMailRows {
				data.Mail, data.MailMore = data.Mail[len(data.Mail)-maxMailRows:], true
			}
			if data.Tasks, err = t.Tasks(ctx); err == nil {
				data.Requests, err = t.Requests(ctx)
			}
		}
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "team", data)
}

// mailHistory returns every mail of the team's members, oldest first: the
// mails each member has read (its journal's inbox events) and those still
// in its mailbox. A mail posted to several members (a broadcast) is one
// row with all of them.
func (d *Dashboard) mailHistory(ctx context.Context, t *team.TeamRun, members []team.MemberStatus) ([]mailRow, error) {
	var rows []mailRow
	at := map[string]int{} // sender and mail id -> index in rows
	add := func(to string, m store.Mail, unread bool) {
		k := m.From + "\x00" + m.ID
		i, ok := at[k]
		if !ok {
			i = len(rows)
			at[k] = i
			rows = append(rows, mailRow{Mail: m})
		}
		rows[i].To = append(rows[i].To, to)
		if unread {
			rows[i].Unread = append(rows[i].Unread, to)
		}
	}
	for _, m := range members {
		read, err := d.mail.read(ctx, d.rt.Store(), m.RunID)
		if err != nil {
			return nil, err
		}
		for _, mail := range read {
			add(m.Name, mail, false)
		}
		if m.Unread == 0 {
			continue
		}
		unread, err := t.Inbox(ctx, m.Name)
		if err != nil && !errors.Is(err, team.ErrNoMember) {
			return nil, err
		}
		for _, mail := range unread {
			add(m.Name, mail, true)
		}
	}
	slices.SortStableFunc(rows, func(a, b mailRow) int { return a.Time.Compare(b.Time) })
	return rows, nil
}

// mailCache keeps the mails each member run has read, as its journal's
// inbox events hold them, with how far the journal was read: a refresh of
// the team page reads only the records since.
type mailCache struct {
	mu   sync.Mutex
	runs map[string]*readMail
}

type readMail struct {
	created time.Time // the run's, to tell a run deleted and made again
	after   int64
	mails   []store.Mail
}

// maxCachedRuns bounds the runs whose read mail the cache keeps.
const maxCachedRuns = 1000

func (c *mailCache) read(ctx context.Context, st store.Store, run string) ([]store.Mail, error) {
	row, err := st.Get(ctx, run)
	if err != nil {
		return nil, fmt.Errorf("dashboard: mail of %s: %w", run, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rm := c.runs[run]
	if rm == nil || !rm.created.Equal(row.CreatedAt) {
		if c.runs == nil || len(c.runs) >= maxCachedRuns {
			c.runs = map[string]*readMail{}
		}
		rm = &readMail{created: row.CreatedAt}
		c.runs[run] = rm
	}
	if rm.after >= row.LastSeq {
		return slices.Clip(rm.mails), nil
	}
	for {
		recs, err := st.Read(ctx, run, rm.after, 1000)
		if err != nil {
			return nil, fmt.Errorf("dashboard: mail of %s: %w", run, err)
		}
		for _, rec := range recs {
			rm.after = rec.Seq
			if rec.Type != string(team.EventInbox) {
				continue
			}
			var ev swarm.Event
			if err := json.Unmarshal(rec.Data, &ev); err != nil {
				return nil, fmt.Errorf("dashboard: mail of %s, record %d: %w", run, rec.Seq, err)
			}
			rm.mails = append(rm.mails, ev.Mails...)
		}
		if len(recs) < 1000 {
			return slices.Clip(rm.mails), nil
		}
	}
}

// onTeam runs an action on the team named in the path, if the caller may
// use its swarm, and goes back to the page the form came from (the team's,
// or a member's run page).
func (d *Dashboard) onTeam(w http.ResponseWriter, r *http.Request, do func(ctx context.Context, t *team.TeamRun) error) {
	ctx := r.Context()
	st, err := d.authorizedRun(ctx, r.PathValue("id"))
	var t *team.TeamRun
	if err == nil {
		t, err = team.Open(ctx, d.rt, st.ID)
	}
	if err == nil {
		err = do(ctx, t)
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	back := "/ui/teams/" + url.PathEscape(t.ID())
	if run := r.PostFormValue("back"); run != "" {
		back = "/ui/runs/" + url.PathEscape(run)
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// teamMail posts a message from the user to a member, or to every member
// ("*").
func (d *Dashboard) teamMail(w http.ResponseWriter, r *http.Request) {
	d.onTeam(w, r, func(ctx context.Context, t *team.TeamRun) error {
		to := strings.TrimSpace(r.PostFormValue("to"))
		content := strings.TrimSpace(strings.ReplaceAll(r.PostFormValue("content"), "\r\n", "\n"))
		if to == "" || content == "" {
			return fmt.Errorf("%w: a mail needs a recipient and a text", swarm.ErrInvalidInput)
		}
		if to == "*" {
			_, err := t.Broadcast(ctx, content)
			return err
		}
		_, err := t.Send(ctx, to, content)
		return err
	})
}

// teamTask adds a task to the team's board.
func (d *Dashboard) teamTask(w http.ResponseWriter, r *http.Request) {
	d.onTeam(w, r, func(ctx context.Context, t *team.TeamRun) error {
		var blocked []int64
		for f := range strings.FieldsFuncSeq(r.PostFormValue("blocked_by"), func(c rune) bool { return c == ',' || c == ' ' || c == '#' }) {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil || n <= 0 {
				return fmt.Errorf("%w: blocked by %q: want task numbers such as 1, 2", swarm.ErrInvalidInput, f)
			}
			blocked = append(blocked, n)
		}
		_, err := t.AddTask(ctx, strings.TrimSpace(r.PostFormValue("subject")), strings.TrimSpace(r.PostFormValue("description")), blocked...)
		return err
	})
}

// teamShutdown shuts a teammate down: its run is stopped with the reason
// given (the lead's run is the team: Stop on its page ends the team).
func (d *Dashboard) teamShutdown(w http.ResponseWriter, r *http.Request) {
	d.onTeam(w, r, func(ctx context.Context, t *team.TeamRun) error {
		name := r.PostFormValue("member")
		members, err := t.Roster(ctx)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(members, func(m team.MemberStatus) bool { return m.Name == name && !m.Lead })
		if i < 0 {
			return fmt.Errorf("%w: the team has no teammate named %q", team.ErrNoMember, name)
		}
		return d.rt.Stop(ctx, members[i].RunID, d.reason(ctx, r, "shut down from the dashboard"))
	})
}

// reason is the reason a form gives for stopping, or what (with the user's
// name when there is a login).
func (d *Dashboard) reason(ctx context.Context, r *http.Request, what string) string {
	if reason := strings.TrimSpace(r.PostFormValue("reason")); reason != "" {
		return reason
	}
	if s := sessionOf(ctx); s.principal != nil && d.opts.Auth.Required() {
		what += " by " + s.principal.Name
	}
	return what
}

// mailRecipients lists who can be mailed: every member that has not ended.
func mailRecipients(members []team.MemberStatus) []string {
	var out []string
	for _, m := range members {
		if !m.Ended() {
			out = append(out, m.Name)
		}
	}
	return out
}

// memberName is the member name of a team member's run id (the lead's
// run is the team's own id).
func memberName(team, lead, run string) string {
	if name, ok := strings.CutPrefix(run, team+"~"); ok {
		return name
	}
	return cmp.Or(lead, run)
}
