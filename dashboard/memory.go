package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/store"
)

// The memory pages: the store's memory banks (what agents remember across
// runs, package memory), one bank's entries a page at a time, and the
// actions that delete an entry or a whole bank. As in the HTTP API's
// memory routes, banks belong to no swarm, so they take a token allowed
// every swarm.

// Limits of the memory pages.
const (
	// maxBankRows bounds the banks the banks page lists.
	maxBankRows = 500
	// maxFilter bounds a key prefix or cursor (a key is at most 1 KiB).
	maxFilter = 1 << 10
	// clipRunes is how much of an entry's text its row shows before
	// "show all".
	clipRunes = 160
)

type banksData struct {
	// None says why there are no banks to show: the store keeps none.
	None    string
	Banks   []store.BankInfo
	More    bool
	Prefix  string
	Deleted string // the bank just deleted
	Count   int    // the entries it held
}

type bankData struct {
	Bank    store.BankInfo
	Entries []memRow
	Prefix  string
	After   string
	Next    string // the key after which the next page starts
	Deleted string // the key just deleted
}

func (b bankData) title() string { return "Memory bank " + b.Bank.Name }

// memRow is an entry as a row shows it: Clip is the beginning of a long
// text, empty when the text is short enough to show whole.
type memRow struct {
	store.MemoryEntry
	Clip string
}

// memories returns the store's memory banks, or false with why not: a
// token that is not allowed every swarm is refused (403), and a store
// without banks gives a note (the banks page shows it; elsewhere it is a
// 404).
func (d *Dashboard) memories(r *http.Request) (store.Memories, string, error) {
	if p := auth.FromContext(r.Context()); p != nil && !p.All() {
		return nil, "", fmt.Errorf("memory banks need a token allowed every swarm: %w", auth.ErrForbidden)
	}
	ms, ok := d.rt.Store().(store.Memories)
	if !ok {
		return nil, fmt.Sprintf("This server's store (%T) keeps no memory banks: agents given memory need a store that does (memory, SQLite or PostgreSQL).", d.rt.Store()), nil
	}
	return ms, "", nil
}

// bankOf returns the store's banks and the bank named in the path.
func (d *Dashboard) bankOf(r *http.Request) (store.Memories, string, error) {
	ms, none, err := d.memories(r)
	if err != nil {
		return nil, "", err
	}
	if ms == nil {
		return nil, "", noBanks(none)
	}
	bank := r.PathValue("bank")
	if err := store.CheckBank(bank); err != nil {
		return nil, "", fmt.Errorf("%w: %w", swarm.ErrInvalidInput, err)
	}
	return ms, bank, nil
}

// noBanks is the note of a store without memory banks, as an error that
// matches store.ErrNotFound.
type noBanks string

func (e noBanks) Error() string        { return string(e) }
func (e noBanks) Is(target error) bool { return target == store.ErrNotFound }

// filterParam reads a key prefix or cursor from the query.
func filterParam(q url.Values, name string) (string, error) {
	v := q.Get(name)
	if len(v) > maxFilter || !utf8.ValidString(v) {
		return "", fmt.Errorf("%w: %s: want at most %d bytes of UTF-8", swarm.ErrInvalidInput, name, maxFilter)
	}
	return v, nil
}

func (d *Dashboard) memoryPage(w http.ResponseWriter, r *http.Request) {
	ms, none, err := d.memories(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	data := banksData{None: none, Deleted: q.Get("deleted")}
	data.Count, _ = strconv.Atoi(q.Get("entries"))
	if data.Prefix, err = filterParam(q, "prefix"); err != nil {
		d.fail(w, r, err)
		return
	}
	if ms != nil {
		if data.Banks, err = ms.Banks(r.Context(), data.Prefix); err != nil {
			d.fail(w, r, err)
			return
		}
		if len(data.Banks) > maxBankRows {
			data.Banks, data.More = data.Banks[:maxBankRows], true
		}
	}
	d.render(w, r, http.StatusOK, "memory", data)
}

func (d *Dashboard) bankPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ms, bank, err := d.bankOf(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	data := bankData{Deleted: q.Get("deleted")}
	if data.Prefix, err = filterParam(q, "prefix"); err == nil {
		data.After, err = filterParam(q, "after")
	}
	if err == nil {
		data.Bank, err = ms.Bank(ctx, bank)
	}
	var es []store.MemoryEntry
	if err == nil {
		// One more than a page tells whether there is a next one.
		es, err = ms.ListMemories(ctx, bank, store.MemoryFilter{Prefix: data.Prefix, After: data.After, Limit: pageSize + 1})
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if len(es) > pageSize {
		es = es[:pageSize]
		data.Next = es[len(es)-1].Key
	}
	data.Entries = make([]memRow, len(es))
	for i, e := range es {
		data.Entries[i] = memRow{MemoryEntry: e}
		if utf8.RuneCountInString(e.Text) > clipRunes {
			data.Entries[i].Clip = string([]rune(e.Text)[:clipRunes])
		}
	}
	d.render(w, r, http.StatusOK, "bank", data)
}

// deleteMemory deletes the entry of the form's key and goes back to the
// bank's page (with the key prefix it was filtered by).
func (d *Dashboard) deleteMemory(w http.ResponseWriter, r *http.Request) {
	ms, bank, err := d.bankOf(r)
	key := r.PostFormValue("key")
	if err == nil {
		if err = store.CheckMemoryKey(bank, key); err != nil {
			err = fmt.Errorf("%w: %w", swarm.ErrInvalidInput, err)
		}
	}
	if err == nil {
		err = ms.DeleteMemory(r.Context(), bank, key)
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	v := url.Values{"deleted": {key}}
	if p := r.PostFormValue("prefix"); p != "" && len(p) <= maxFilter {
		v.Set("prefix", p)
	}
	http.Redirect(w, r, "/ui/memory/"+url.PathEscape(bank)+"?"+v.Encode(), http.StatusSeeOther)
}

// deleteBank deletes the bank named in the path, with all its entries,
// and goes to the banks page.
func (d *Dashboard) deleteBank(w http.ResponseWriter, r *http.Request) {
	ms, bank, err := d.bankOf(r)
	n := 0
	if err == nil {
		n, err = ms.DeleteBank(r.Context(), bank)
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	v := url.Values{"deleted": {bank}, "entries": {strconv.Itoa(n)}}
	http.Redirect(w, r, "/ui/memory?"+v.Encode(), http.StatusSeeOther)
}
