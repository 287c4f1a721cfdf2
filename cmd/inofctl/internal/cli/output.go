package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"gopkg.in/yaml.v3"
)

// plain turns a protobuf message into plain maps and lists (proto field
// names, every field present) so that JSON and YAML output are stable.
func plain(m proto.Message) (any, error) {
	b, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return v, nil
}

// plainList converts messages with plain.
func plainList[M proto.Message](ms []M) ([]any, error) {
	out := make([]any, len(ms))
	for i, m := range ms {
		v, err := plain(m)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// print writes v as JSON or YAML, or calls table for the table format.
func (a *app) print(v any, table func(w io.Writer)) error {
	return write(a.io.Out, a.opts.Output, v, table)
}

func write(out io.Writer, format string, v any, table func(w io.Writer)) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		_, err = out.Write(b)
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// row writes tab-separated cells; empty cells print as "-".
func row(w io.Writer, cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		s := fmt.Sprint(c)
		if s == "" {
			s = "-"
		}
		parts[i] = s
	}
	fmt.Fprintln(w, strings.Join(parts, "\t"))
}

// namedMembers is a zone or an alias as the API returns it.
type namedMembers interface {
	proto.Message
	GetName() string
	GetMembers() []string
}

// listNamed prints zones or aliases: key names the list in JSON/YAML,
// heading the first column of the table.
func listNamed[T namedMembers](a *app, revision, key, heading string, xs []T) error {
	list, err := plainList(xs)
	if err != nil {
		return err
	}
	return a.print(map[string]any{"revision": revision, key: list}, func(w io.Writer) {
		row(w, heading, "MEMBERS")
		for _, x := range xs {
			row(w, x.GetName(), strings.Join(x.GetMembers(), ", "))
		}
	})
}

// showNamed prints the zone or alias called name (what says which).
func showNamed[T namedMembers](a *app, what string, xs []T, name string) error {
	for _, x := range xs {
		if x.GetName() != name {
			continue
		}
		v, err := plain(x)
		if err != nil {
			return err
		}
		return a.print(v, func(w io.Writer) {
			fmt.Fprintf(w, "%s %s (%d member(s))\n", what, x.GetName(), len(x.GetMembers()))
			for _, m := range x.GetMembers() {
				fmt.Fprintf(w, "  %s\n", m)
			}
		})
	}
	return fmt.Errorf("%s %q: not found", what, name)
}
