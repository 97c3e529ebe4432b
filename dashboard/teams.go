package dashboard

import (
	"errors"
	"net/http"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/server"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/team"
)

// The teams pages: the team runs this token may see, and one team's roster
// (with each member's lifecycle state and unread mail), mailboxes, task
// board and protocol requests, read from the store like the HTTP API's
// team routes.

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
	ID       string
	Lead     string
	Status   swarm.Status
	Members  []team.MemberStatus
	Mail     []memberMail
	Tasks    []team.Task
	Requests []team.ProtocolRequest
}

func (t teamData) title() string { return "Team " + t.ID }

// memberMail is a member's unread mail.
type memberMail struct {
	Member string
	Mails  []team.Mail
}

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
		for _, m := range data.Members {
			if m.Unread == 0 {
				continue
			}
			mails, err := t.Inbox(ctx, m.Name)
			if err != nil && !errors.Is(err, team.ErrNoMember) {
				d.fail(w, r, err)
				return
			}
			data.Mail = append(data.Mail, memberMail{Member: m.Name, Mails: mails})
		}
		if data.Tasks, err = t.Tasks(ctx); err == nil {
			data.Requests, err = t.Requests(ctx)
		}
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "team", data)
}
