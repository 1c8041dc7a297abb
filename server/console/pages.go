package console

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/views"
)

// ledgerState is the ledger's head and root as a page read them: the size
// and root its proof links are made against.
type ledgerState struct {
	Size uint64
	Head string // hash of event Size; "" for an empty ledger
	Root string
}

func readLedger(tx *boltstore.Tx) (ledgerState, error) {
	h := tx.Head()
	root, err := tx.Root(h.Seq)
	if err != nil {
		return ledgerState{}, err
	}
	st := ledgerState{Size: h.Seq, Root: root.String()}
	if h.Seq > 0 {
		st.Head = h.Hash.String()
	}
	return st, nil
}

// column is one status of the board.
type column struct {
	Status string
	Tasks  []projections.Task
}

type boardData struct {
	Project  string   // the project shown; "" for all
	Projects []string // every project, for the filter
	Columns  []column
	Total    int
	Ledger   ledgerState
}

// board is the task board: one column per status, in the order of a task's
// life, tasks in creation order.
func (c *console) board(w http.ResponseWriter, r *http.Request) {
	q, ok := c.query(w, r, "project")
	if !ok {
		return
	}
	project := q.Get("project")
	switch {
	case q.Has("project") && project == "":
		c.badRequest(w, r, "project= names no project; leave it out for every project's tasks.")
		return
	}
	if err := views.CheckProject(project); err != nil {
		c.badRequest(w, r, "The "+err.Error()+".")
		return
	}
	d := boardData{Project: project}
	err := c.opts.Store.View(func(tx *boltstore.Tx) error {
		if err := projections.Current(tx); err != nil {
			return err
		}
		byStatus := map[string][]projections.Task{}
		err := projections.Tasks(tx, func(t projections.Task) bool {
			if !slices.Contains(d.Projects, t.Project) {
				d.Projects = append(d.Projects, t.Project)
			}
			if project == "" || t.Project == project {
				byStatus[t.Status] = append(byStatus[t.Status], t)
				d.Total++
			}
			return r.Context().Err() == nil
		})
		if err != nil {
			return err
		}
		for _, col := range byStatus {
			for i := range col {
				if err := projections.CountThoughts(tx, &col[i]); err != nil {
					return err
				}
			}
		}
		for _, st := range domain.Statuses {
			d.Columns = append(d.Columns, column{Status: st, Tasks: byStatus[st]})
		}
		d.Ledger, err = readLedger(tx)
		return err
	})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if project != "" && !slices.Contains(d.Projects, project) {
		c.notFound(w, r, "The ledger has no task in project "+project+".")
		return
	}
	slices.Sort(d.Projects)
	c.render(w, http.StatusOK, "board", page{Title: "Board", Nav: "board", Authed: true, Data: d})
}

type taskData struct {
	*views.Task
	History []views.Step // the steps that changed the status
	Ledger  ledgerState
	Steps   trailPage // the part of Timeline shown
}

// stepsPerPage is how many steps of a decision trail a task page shows: a
// task of 20,000 thoughts made one page of 15 MB.
const stepsPerPage = 200

// trailPage is one page of a decision trail: Timeline[First-1:Last], page
// Page of Pages (Prev, Next: the neighbours, 0 if none).
type trailPage struct {
	Page, Pages, Prev, Next int
	First, Last, Of         int
}

func (c *console) task(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	q, ok := c.query(w, r, "page")
	if !ok {
		return
	}
	if _, ok := domain.ParseID(domain.TaskPrefix, id); !ok {
		c.badRequest(w, r, "That is not a task id (T-0001).")
		return
	}
	pageNo := uint64(1)
	if q.Has("page") {
		n, err := strconv.ParseUint(q.Get("page"), 10, 64)
		if err != nil || n == 0 {
			c.badRequest(w, r, "the page must be a positive integer")
			return
		}
		pageNo = n
	}
	var d taskData
	err := c.opts.Store.View(func(tx *boltstore.Tx) error {
		var err error
		if d.Task, err = views.ReadTask(tx, id); err != nil {
			return err
		}
		d.Ledger, err = readLedger(tx)
		return err
	})
	switch {
	case errors.Is(err, views.ErrNotFound):
		c.notFound(w, r, "The ledger has no task "+id+".")
		return
	case err != nil:
		c.fail(w, r, err)
		return
	}
	for _, st := range d.Timeline {
		if st.StatusChange() {
			d.History = append(d.History, st)
		}
	}
	steps := len(d.Timeline)
	pages := max(1, (steps+stepsPerPage-1)/stepsPerPage)
	if pageNo > uint64(pages) {
		c.notFound(w, r, fmt.Sprintf("The decision trail of %s has %s of %d steps.", id, domain.Plural(pages, "page"), stepsPerPage))
		return
	}
	d.Steps = trailPage{Page: int(pageNo), Pages: pages, Of: steps}
	at := d.Steps.Page
	d.Steps.First, d.Steps.Last = min(steps, (at-1)*stepsPerPage+1), min(steps, at*stepsPerPage)
	if at > 1 {
		d.Steps.Prev = at - 1
	}
	if at < pages {
		d.Steps.Next = at + 1
	}
	d.Timeline = d.Timeline[(at-1)*stepsPerPage : d.Steps.Last]
	c.render(w, http.StatusOK, "task", page{Title: id + " " + d.Task.Task.Title, Nav: "board", Authed: true, Data: d})
}

type sessionsData struct {
	Sessions []views.SessionSummary
	Ledger   ledgerState
}

func (c *console) sessions(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.query(w, r); !ok {
		return
	}
	var d sessionsData
	err := c.opts.Store.View(func(tx *boltstore.Tx) error {
		var err error
		if d.Sessions, err = views.Sessions(tx, ""); err != nil {
			return err
		}
		d.Ledger, err = readLedger(tx)
		return err
	})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, http.StatusOK, "sessions", page{Title: "Audit sessions", Nav: "sessions", Authed: true, Data: d})
}

func (c *console) session(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, ok := c.query(w, r); !ok {
		return
	}
	if _, ok := domain.ParseID(domain.SessionPrefix, id); !ok {
		c.badRequest(w, r, "That is not an audit session id (A-0001).")
		return
	}
	var s *views.Session
	err := c.opts.Store.View(func(tx *boltstore.Tx) error {
		var err error
		s, err = views.ReadSession(tx, id)
		return err
	})
	switch {
	case errors.Is(err, views.ErrNotFound):
		c.notFound(w, r, "The ledger has no audit session "+id+".")
		return
	case err != nil:
		c.fail(w, r, err)
		return
	}
	c.render(w, http.StatusOK, "session", page{Title: id, Nav: "sessions", Authed: true, Data: s})
}

type ledgerData struct {
	Ledger   ledgerState
	Tasks    int
	Sessions int
}

func (c *console) ledger(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.query(w, r); !ok {
		return
	}
	var d ledgerData
	err := c.opts.Store.View(func(tx *boltstore.Tx) error {
		var err error
		if d.Ledger, err = readLedger(tx); err != nil {
			return err
		}
		if err = projections.Current(tx); err != nil {
			return err
		}
		err = projections.Tasks(tx, func(projections.Task) bool { d.Tasks++; return true })
		if err != nil {
			return err
		}
		return views.EachSession(tx, func(projections.Session) { d.Sessions++ })
	})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, http.StatusOK, "ledger", page{Title: "Ledger", Nav: "ledger", Authed: true, Data: d})
}
