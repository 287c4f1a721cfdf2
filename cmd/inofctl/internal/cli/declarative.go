package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"

	"google.golang.org/grpc/status"
	"gopkg.in/yaml.v3"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/app/api/zoningfile"
	"github.com/openinof/inof/app/daemon/config"
)

// encodeFile writes f as YAML with a header naming its revision.
func encodeFile(w io.Writer, f zoningfile.File, revision string) error {
	fmt.Fprintf(w, "# inofctl zoning export: revision %s\n# Edit, review, then: inofctl zoning apply -f FILE\n", revision)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	return enc.Close()
}

// exportHeader is the first line encodeFile writes; it names the revision
// the file was exported at, the base an apply checks.
var exportHeader = regexp.MustCompile(`^# inofctl zoning export: revision (\S+)`)

// readZoningFile reads a zoning file ("-": standard input) and the
// revision its export header names ("" for a file without one). Unknown
// keys are errors (a typo must not silently mean "no zones").
func readZoningFile(path string, stdin io.Reader) (zoningfile.File, string, error) {
	var r io.Reader = stdin
	if path != "-" {
		fh, err := os.Open(path)
		if err != nil {
			return zoningfile.File{}, "", fmt.Errorf("zoning file: %w", err)
		}
		defer fh.Close()
		r = fh
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return zoningfile.File{}, "", fmt.Errorf("zoning file %s: %w", path, err)
	}
	var base string
	if m := exportHeader.FindSubmatch(b); m != nil {
		base = string(m[1])
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return zoningfile.File{}, "", fmt.Errorf("zoning file %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return zoningfile.File{}, "", fmt.Errorf("zoning file %s is empty", path)
	}
	if err := checkZoningNode(doc.Content[0], b, path); err != nil {
		return zoningfile.File{}, "", err
	}
	var f zoningfile.File
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return zoningfile.File{}, "", fmt.Errorf("zoning file %s: %w", path, err)
	}
	if f.Settings.DefaultZone == nil || f.Settings.HardZoning == nil {
		return zoningfile.File{}, "", fmt.Errorf("zoning file %s: settings.default_zone and settings.hard_zoning must be set (inofctl zoning export writes them)", path)
	}
	return f, base, nil
}

// zoningKeys are the keys of a zoning file, by section ("" the top).
var zoningKeys = map[string][]string{"": {"settings", "aliases", "zones", "pins"}, "settings": {"default_zone", "hard_zoning"}}

// checkZoningNode checks a zoning file's YAML before it is decoded, to
// say where a mistake is: an unknown key (and the key it likely meant), a
// member list that is not a list of single-line members (a list item
// indented too far runs onto the line before it: "10.1.0.20 - 10.1.0.30"
// would read as a range), a member listed twice.
func checkZoningNode(top *yaml.Node, src []byte, path string) error {
	at := func(n *yaml.Node, format string, a ...any) error {
		return fmt.Errorf("zoning file %s:%d: %s", path, n.Line, fmt.Sprintf(format, a...))
	}
	if top.Kind != yaml.MappingNode {
		return at(top, "not a mapping of settings, aliases and zones")
	}
	lines := bytes.Split(src, []byte("\n"))
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if !slices.Contains(zoningKeys[""], k.Value) {
			return at(k, "unknown key %s%s", k.Value, didYouMean(k.Value, zoningKeys[""]))
		}
		switch k.Value {
		case "settings":
			if v.Kind != yaml.MappingNode {
				continue // the decoder says what it wanted
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				if sk := v.Content[j]; !slices.Contains(zoningKeys["settings"], sk.Value) {
					return at(sk, "unknown key settings.%s%s", sk.Value, didYouMean(sk.Value, zoningKeys["settings"]))
				}
			}
		case "aliases", "zones", "pins":
			if v.Kind != yaml.MappingNode {
				continue
			}
			kind := map[string]string{"aliases": "alias", "zones": "zone", "pins": "pin"}[k.Value]
			for j := 0; j+1 < len(v.Content); j += 2 {
				name, list := v.Content[j], v.Content[j+1]
				if list.Kind != yaml.SequenceNode {
					if list.Kind == yaml.ScalarNode && list.Tag == "!!null" {
						continue
					}
					return at(list, "%s %s: members must be a list (- MEMBER on each line, or [A, B])", kind, name.Value)
				}
				first := map[string]int{}
				for _, m := range list.Content {
					if m.Kind != yaml.ScalarNode {
						return at(m, "%s %s: a member must be one value, not a list or mapping (indented too far?)", kind, name.Value)
					}
					if m.Style == 0 && !onOneLine(lines, m) {
						return at(m, "%s %s: member %q runs onto the next line: is the list item after it indented too far? "+
							"(a range is written on one line: A-B)", kind, name.Value, m.Value)
					}
					if l, dup := first[m.Value]; dup {
						return at(m, "%s %s lists %s twice (first on line %d)", kind, name.Value, m.Value, l)
					}
					first[m.Value] = m.Line
				}
			}
		}
	}
	return nil
}

// onOneLine reports whether the plain scalar n is written whole on its
// line: a plain scalar continued on the next lines is folded into one
// value with spaces.
func onOneLine(lines [][]byte, n *yaml.Node) bool {
	if n.Line < 1 || n.Line > len(lines) || n.Column < 1 {
		return true
	}
	l := lines[n.Line-1]
	if n.Column-1 > len(l) {
		return false
	}
	return bytes.HasPrefix(l[n.Column-1:], []byte(n.Value))
}

// didYouMean is " (did you mean K?)" for the key of keys nearest to k, or "".
func didYouMean(k string, keys []string) string {
	if near := config.Closest(k, keys); near != "" {
		return " (did you mean " + near + "?)"
	}
	return ""
}

// fileApply is one `zoning apply -f` or `zoning diff -f`.
type fileApply struct {
	path    string
	yes     bool
	force   bool // apply a file that would undo changes made since its export
	dryRun  bool // show everything, commit nothing
	compare bool // zoning diff -f: undone changes are shown, not refused
}

// applyFile compares a zoning file with the configuration in effect. A
// file exported at another revision than the one in effect would undo the
// changes made since that it does not hold: those are shown, and the apply
// is refused unless force (which is then stated). It prints the member
// diff and the access diff, and commits unless dryRun or compare.
func (a editor) applyFile(ctx context.Context, c inofv1.FabricClient, o fileApply) error {
	want, base, err := readZoningFile(o.path, a.io.In)
	if err != nil {
		return err
	}
	cur, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
	if err != nil {
		return err
	}
	p := zoningfile.PlanFor(zoningfile.Of(cur), want)
	if len(p.Edits) == 0 {
		fmt.Fprintf(a.io.Out, "no change: the fabric already matches %s (revision %s)\n", o.path, cur.GetRevision())
		return nil
	}
	if base != "" && base != cur.GetRevision() && a.undoes(ctx, c, o.path, base, cur, want) {
		if !o.force && !o.compare {
			return fmt.Errorf("not applied: %s is based on revision %s, and applying it would undo the changes above; "+
				"export again and redo the edit (`zoning diff -f %s` compares), or --force to apply it as it is",
				o.path, base, o.path)
		}
		if o.force {
			fmt.Fprintf(a.io.Err, "--force: applying %s over revision %s undoes the changes made since revision %s listed above\n",
				o.path, cur.GetRevision(), base)
		}
	}
	if o.dryRun || o.compare {
		printPlan(a.io.Out, p)
		warnCatchAll(a.io.Out, p.Edits)
		dry, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: p.Edits, ExpectedRevision: cur.GetRevision(), DryRun: true, Action: "apply"})
		if err != nil {
			return err
		}
		printChanges(a.io.Out, dry.GetChanges())
		if o.dryRun {
			fmt.Fprintln(a.io.Out, "dry run: nothing committed")
		}
		return nil
	}
	return a.applyPlan(ctx, c, p, cur.GetRevision(), "apply", o.yes)
}

// undoes reports whether applying want (from the file at path, exported
// at revision base) over cur would undo changes committed since base, and
// lists them; a base the fabric no longer retains counts as undoing (what
// changed since is unknown).
func (a editor) undoes(ctx context.Context, c inofv1.FabricClient, path, base string, cur *inofv1.Zoning, want zoningfile.File) bool {
	old, err := c.GetRevision(ctx, &inofv1.GetRevisionRequest{Revision: base})
	if err != nil {
		fmt.Fprintf(a.io.Err, "%s was exported at revision %s, the fabric is now at revision %s; what changed since cannot be shown (%s)\n",
			path, base, cur.GetRevision(), status.Convert(err).Message())
		return true
	}
	undone := zoningfile.Undone(zoningfile.Of(old), zoningfile.Of(cur), want)
	if len(undone) == 0 {
		return false
	}
	fmt.Fprintf(a.io.Err, "%s was exported at revision %s, the fabric is now at revision %s; applying it undoes %d change(s) made since:\n",
		path, base, cur.GetRevision(), len(undone))
	for _, l := range undone {
		fmt.Fprintf(a.io.Err, "  %s\n", l)
	}
	return true
}

// printPlan shows the member diff.
func printPlan(w io.Writer, p zoningfile.Plan) {
	fmt.Fprintf(w, "%d zoning change(s):\n", len(p.Diff))
	for _, l := range p.Diff {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// applyPlan shows the member diff and the access diff (a dry run), asks
// (unless yes), and commits the plan at the revision it was made against.
func (a editor) applyPlan(ctx context.Context, c inofv1.FabricClient, p zoningfile.Plan, rev, action string, yes bool) error {
	printPlan(a.io.Err, p)
	warnCatchAll(a.io.Err, p.Edits)
	return a.commitAs(ctx, c, p.Edits, rev, action, yes, true)
}
