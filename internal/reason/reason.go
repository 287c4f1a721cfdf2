// Package reason names the errors a receiver drops input for with short,
// stable labels, for its drop counters and logs: l2proto's frames and
// BFD's packets each keep one Table.
package reason

import "errors"

// Other is the label of an error no entry of a Table matches.
const Other = "other"

// Label names the errors that wrap Err.
type Label struct {
	Err  error
	Name string
}

// Table is the labels of one receiver, matched in order.
type Table []Label

// Of returns the name of the first label whose Err err wraps (errors.Is),
// or Other.
func (t Table) Of(err error) string {
	for _, l := range t {
		if errors.Is(err, l.Err) {
			return l.Name
		}
	}
	return Other
}

// Names lists every name Of returns: the table's in order, then extra
// (labels a receiver counts without an error), then Other, so that
// counters can show every reason from the start.
func (t Table) Names(extra ...string) []string {
	out := make([]string, 0, len(t)+len(extra)+1)
	for _, l := range t {
		out = append(out, l.Name)
	}
	out = append(out, extra...)
	return append(out, Other)
}
