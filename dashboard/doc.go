// Package dashboard is the web dashboard of a swarm runtime: the runs of
// the store with live updates, a page per run (its timeline replayed from
// the journal and then followed live, the tree of its handoffs and child
// runs, tool calls with their input and output, the images and files of
// the input and of tools' results, streaming model text, usage
// and cost per agent and for the tree, the duration of each step and a
// Gantt view of them, filters and text search, the pause with a resume form
// or, for an idle teammate, a mail form, stop with a reason, delete, and
// fork from any recorded step), conversations as transcripts with a chat
// box, teams (roster, mail history, task board; mail, add tasks, shut a
// teammate down), the registry of swarms, agents' memory banks (their
// entries by key; delete an entry or a bank, with a token allowed every
// swarm), the network, and the node and its cluster. The team, conversations, network and cluster pages refresh
// a live part of themselves every few seconds (?fragment=live), as the
// runs list does.
//
// # Large runs
//
// The timeline, the Gantt view and the transcript are virtual lists: their
// rows are cut into blocks, and only the blocks near the viewport hold
// their rows (an IntersectionObserver fills and empties them). Filters
// pick the events to list rather than hide rows. A run of 100,000 events
// so keeps a few thousand DOM nodes; the figures are in
// docs/performance.md and e2e/large.test.mjs measures them.
//
// `swarm serve` mounts it at / and /ui/ (see [Dashboard.Mounts]); a Go
// program that embeds [server.Server] adds the same mounts to
// [server.Options.Mounts].
//
// # Why server-rendered pages and a little JavaScript
//
// The pages are html/template documents rendered from the store, and one
// hand-written JavaScript file (static/app.js) follows a run's event
// stream (GET /v1/runs/{id}/events, the same server-sent events API
// clients use) and refreshes the runs list. There is no JavaScript build
// step: the assets are embedded with go:embed as they are in the
// repository, so `go install` and `go run` need no Node, and what is
// served is what is reviewed. Every page works without JavaScript except
// the live parts; every action is a plain HTML form.
//
// # Images and files
//
// A part kept as a blob is served at /ui/runs/{id}/blobs/{hash} to a
// session allowed the run, and only if the run refers to it. Its bytes,
// not the media type the part claims, decide how: a PNG, JPEG, GIF or WebP
// image inline (the page's thumbnails), anything else, SVG and PDF
// included, as an application/octet-stream attachment, always with
// nosniff and a Content-Security-Policy that sandboxes it. Small parts
// ride in their events and are shown from their bytes (as data: URLs,
// which the pages' img-src allows). A part at a URL is a link, never
// loaded by the page.
//
// # Authentication
//
// When the server has bearer tokens, the dashboard asks for one on a login
// page and keeps it in an HttpOnly, SameSite=Strict cookie
// ([auth.SessionCookie]), which the API accepts on GET requests (a browser
// cannot send a bearer header when it follows a link or opens an event
// stream). A token sees only the runs of its swarms, here as in the API.
// The cookie holds the token itself rather than a server-side session, so
// that removing a token from the server's configuration logs out every
// browser using it, and several nodes of a cluster accept the same cookie.
// The dashboard's forms that change runs (resume, stop, delete, fork,
// start, the team's mail, task and shutdown forms, and the memory
// deletes) are
// refused unless they come from the dashboard's own origin
// ([http.CrossOriginProtection]) and carry a CSRF token derived from the
// session. Without tokens (a loopback server), there is no login.
package dashboard
