package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"
	"gopkg.in/yaml.v3"

	"github.com/openinof/inof/app/api/zoningfile"
	"github.com/openinof/inof/inof"
)

// plain turns a protobuf message into plain maps and lists for JSON and
// YAML output: proto field names, every field present (unset messages as
// null), numbers as numbers (64-bit ones too, unlike protojson), enums
// spelled as the tables spell them (ROLE_HOST → "host"), times in RFC 3339.
func plain(m proto.Message) (any, error) { return plainMessage(m.ProtoReflect()), nil }

func plainMessage(m protoreflect.Message) any {
	if !m.IsValid() {
		return nil
	}
	if m.Descriptor().FullName() == "google.protobuf.Timestamp" {
		ts, _ := m.Interface().(*timestamppb.Timestamp)
		return ts.AsTime().UTC().Format(time.RFC3339Nano)
	}
	out := map[string]any{}
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() && !m.Has(fd) {
			continue
		}
		name := string(fd.Name())
		switch {
		case fd.IsList():
			l := m.Get(fd).List()
			items := make([]any, l.Len())
			for j := range l.Len() {
				items[j] = plainValue(fd, l.Get(j))
			}
			out[name] = items
		case fd.IsMap():
			mm := map[string]any{}
			m.Get(fd).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				mm[k.String()] = plainValue(fd.MapValue(), v)
				return true
			})
			out[name] = mm
		case fd.HasPresence() && !m.Has(fd):
			out[name] = nil
		default:
			out[name] = plainValue(fd, m.Get(fd))
		}
	}
	return out
}

func plainValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return plainMessage(v.Message())
	case protoreflect.EnumKind:
		return enumName(fd.Enum(), v.Enum())
	case protoreflect.BytesKind:
		return base64.StdEncoding.EncodeToString(v.Bytes())
	}
	return v.Interface()
}

// enumName spells an enum value without its type prefix, in lower case.
func enumName(ed protoreflect.EnumDescriptor, n protoreflect.EnumNumber) string {
	vd := ed.Values().ByNumber(n)
	if vd == nil {
		return fmt.Sprint(int32(n))
	}
	var prefix strings.Builder
	for i, r := range string(ed.Name()) {
		if i > 0 && unicode.IsUpper(r) {
			prefix.WriteByte('_')
		}
		prefix.WriteRune(unicode.ToUpper(r))
	}
	return strings.ToLower(strings.TrimPrefix(string(vd.Name()), prefix.String()+"_"))
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

// OutputVersion names the shape of inofctl's JSON and YAML output: every
// answer is one envelope {apiVersion, kind, revision, items | item}
// (docs/cli.md, "Output"). A change of that shape changes the version.
const OutputVersion = "inofctl/v1"

// envelope is one answer as JSON and YAML print it: a list kind
// ("DeviceList") carries its entries in items, any other kind its object in
// item; revision is the zoning revision the answer reflects, where there
// is one.
type envelope struct {
	APIVersion string `json:"apiVersion" yaml:"apiVersion"`
	Kind       string `json:"kind" yaml:"kind"`
	Revision   string `json:"revision,omitempty" yaml:"revision,omitempty"`
	Items      any    `json:"items,omitempty" yaml:"items,omitempty"`
	Item       any    `json:"item,omitempty" yaml:"item,omitempty"`
}

// wrap puts v in its envelope: a []any is a list's items (kind should end
// in "List"), anything else one item.
func wrap(kind, revision string, v any) envelope {
	e := envelope{APIVersion: OutputVersion, Kind: kind, Revision: revision}
	if l, ok := v.([]any); ok {
		if l == nil {
			l = []any{}
		}
		e.Items = l
	} else {
		e.Item = v
	}
	return e
}

// print writes v in its envelope as JSON or YAML, or calls table for the
// table formats (table, wide).
func (a *app) print(kind string, v any, table func(w io.Writer)) error {
	return a.printRev(kind, "", v, table)
}

// printRev is print for an answer that reflects a zoning revision.
func (a *app) printRev(kind, revision string, v any, table func(w io.Writer)) error {
	return write(a.io.Out, a.opts.Output, wrap(kind, revision, v), table)
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

// wide reports whether the table is the wide one (-o wide): more columns,
// lists uncut.
func (a *app) wide() bool { return a.opts.Output == "wide" }

// header writes a table's heading row unless --no-headers.
func (a *app) header(w io.Writer, cells ...any) {
	if !a.opts.NoHeaders {
		row(w, cells...)
	}
}

// timeLayout is how human output prints a time: RFC 3339 in UTC with
// milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// stamp formats t with timeLayout.
func stamp(t time.Time) string { return t.UTC().Format(timeLayout) }

// row writes tab-separated cells; empty cells print as "-". Control
// characters and invalid UTF-8 (text devices sent) are escapes, never raw.
func row(w io.Writer, cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		s := inof.Printable(fmt.Sprint(c))
		if s == "" {
			s = "-"
		}
		parts[i] = s
	}
	fmt.Fprintln(w, strings.Join(parts, "\t"))
}

// listMembers is how many members a zone or alias list shows per row.
const listMembers = 8

// namedMembers is a zone or an alias as the API returns it.
type namedMembers interface {
	proto.Message
	GetName() string
	GetMembers() []string
}

// listNamed prints zones or aliases: kind names one of them in JSON/YAML
// ("Zone": a "ZoneList"), heading the first column of the table; -o wide
// lists every member.
func listNamed[T namedMembers](a *app, revision, kind, heading string, xs []T) error {
	list, err := plainList(xs)
	if err != nil {
		return err
	}
	return a.printRev(kind+"List", revision, list, func(w io.Writer) {
		a.header(w, heading, "COUNT", "MEMBERS")
		for _, x := range xs {
			ms := zoningfile.TruncateList(x.GetMembers(), ", ", listMembers)
			if a.wide() {
				ms = strings.Join(x.GetMembers(), ", ")
			}
			row(w, x.GetName(), len(x.GetMembers()), ms)
		}
	})
}

// showNamed prints the zone or alias called name (what says which, kind
// its name in JSON/YAML) at a revision.
func showNamed[T namedMembers](a *app, what, kind, revision string, xs []T, name string) error {
	for _, x := range xs {
		if x.GetName() != name {
			continue
		}
		v, err := plain(x)
		if err != nil {
			return err
		}
		return a.printRev(kind, revision, v, func(w io.Writer) {
			fmt.Fprintf(w, "%s %s (%d member(s))\n", what, x.GetName(), len(x.GetMembers()))
			for _, m := range x.GetMembers() {
				fmt.Fprintf(w, "  %s\n", m)
			}
		})
	}
	return fmt.Errorf("%s %q: not found", what, name)
}

// anyList makes a list of values the []any an envelope takes as items.
func anyList[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
