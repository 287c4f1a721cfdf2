package console

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/app/api/zoningfile"
)

type historyView struct {
	Entries     []*inofv1.JournalEntry // newest first
	Conflicts   []*inofv1.Conflict
	HistorySize uint32
	Current     string
	Lost        map[string]bool // entry ids whose edit a concurrent one lost
	// Diff is the selected entry's change: what turned the revision before
	// it into its own.
	Diff *revisionDiff
}

type revisionDiff struct {
	Entry    *inofv1.JournalEntry
	From, To string
	Lines    []string
	Err      string
}

func (c *Console) history(r *http.Request) (string, any, error) {
	ctx, cancel := bounded(r)
	defer cancel()
	j, err := c.f.ListJournal(ctx, &inofv1.ListJournalRequest{})
	if err != nil {
		return "", nil, err
	}
	cur, err := c.f.GetZoning(ctx, &inofv1.GetZoningRequest{})
	if err != nil {
		return "", nil, err
	}
	v := historyView{Conflicts: j.GetConflicts(), HistorySize: j.GetHistorySize(), Current: cur.GetRevision(), Lost: map[string]bool{}}
	for _, cf := range j.GetConflicts() {
		for _, id := range cf.GetEntries() {
			v.Lost[id] = true
		}
	}
	entries := j.GetEntries() // oldest first
	if id := r.URL.Query().Get("entry"); id != "" {
		for i, e := range entries {
			if e.GetId() != id {
				continue
			}
			d := &revisionDiff{Entry: e, To: e.GetRevision()}
			// The revision before: the latest earlier zoning entry's.
			for k := i - 1; k >= 0; k-- {
				if entries[k].GetRevision() != "" && entries[k].GetAction() != "lossless" {
					d.From = entries[k].GetRevision()
					break
				}
			}
			c.diffRevisions(r, d)
			v.Diff = d
		}
		if v.Diff == nil {
			v.Diff = &revisionDiff{Err: fmt.Sprintf("no journal entry %q (the store keeps the last %d)", id, j.GetHistorySize())}
		}
	}
	v.Entries = slices.Clone(entries)
	slices.Reverse(v.Entries)
	return "History", v, nil
}

// diffRevisions fills d.Lines with what turns revision d.From (none: an
// empty configuration) into d.To, in the words of `inofctl zoning diff`.
func (c *Console) diffRevisions(r *http.Request, d *revisionDiff) {
	ctx, cancel := bounded(r)
	defer cancel()
	if d.Entry.GetAction() == "lossless" {
		d.Lines = []string{"lossless profile set:"}
		d.Lines = append(d.Lines, strings.Split(strings.TrimRight(d.Entry.GetProfileYaml(), "\n"), "\n")...)
		return
	}
	to, err := c.f.GetRevision(ctx, &inofv1.GetRevisionRequest{Revision: d.To})
	if err != nil {
		d.Err = err.Error()
		return
	}
	from := &inofv1.Zoning{}
	if d.From != "" {
		if from, err = c.f.GetRevision(ctx, &inofv1.GetRevisionRequest{Revision: d.From}); err != nil {
			d.Err = err.Error()
			return
		}
	}
	d.Lines = zoningfile.PlanFor(zoningfile.Of(from), zoningfile.Of(to)).Diff
	if len(d.Lines) == 0 {
		d.Lines = []string{"no change"}
	}
}
