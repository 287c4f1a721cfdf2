// Package clidoc writes inofctl's command reference (docs/cli.md) from its
// command tree. It is apart from package cli so that inofctl itself does not
// link the Markdown generator.
package clidoc

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// docIntro opens docs/cli.md, before the generated command reference.
const docIntro = `# inofctl command reference

<!-- Generated from the command tree by ` + "`go generate ./cmd/inofctl`" + ` (make generate); do not edit.
     TestCLIDocUpToDate fails when this file and the commands disagree. -->

inofctl is the admin CLI of an iNOF fabric. It talks to the gRPC API (service ` + "`inof.v1.Fabric`" + `,
app/api/proto/inof/v1/inof.proto) of inofd: by default over the local unix socket
` + "`/run/inofd/api.sock`" + ` (mode 0600, so only its user — root — may connect; no token is asked), or
over TCP with TLS and a bearer token read from a file (` + "`--server host:port --token-file F --ca-file CA`" + `).
The server refuses plaintext and unauthenticated remote calls.

## Zoning changes: single-shot with an expected revision

Every zoning change (` + "`zone`, `alias`, `pin`, `fabric set`" + `) is sent as one ` + "`ApplyZoning`" + ` call holding the
edits and the revision of the configuration they were made against; the reflector applies all of them
in one store transaction, or none, and only if the configuration still has that revision. Before
committing, inofctl sends the same edits as a dry run and prints the visibility changes they would
cause (which host gains or loses which target), then asks. The commit carries the revision the dry run
saw, so what you confirmed is what is applied: if anyone committed in between, the commit fails with
*Aborted* and nothing changes — run the command again. ` + "`--yes`" + ` skips the question and so the dry
run too: the edits are committed at once, in one transaction on the configuration in effect (or on the
staged revision, for ` + "`zoning commit --yes`" + `).

Why not server-side transactions (begin, stage, commit over several calls)? The zone store's
transactions are not safe for concurrent use and the store has no change feed: a server-side session
would have to be owned by one goroutine, leased, expired when a client vanishes, and kept apart per
client — state that a reflector restart or a second reflector would lose anyway. A single call with an
expected revision holds no state on the server, cannot leak, and gives the same guarantee a
transaction gives (validate everything, apply atomically, refuse if someone else changed the
configuration since you looked). The revision is a hash of the configuration's content, so edits merged
from another reflector count as a change too.

Several edits can still be collected like an FC zoning transaction: ` + "`--stage`" + ` adds an edit to a local
staging file (checked with a dry run at once) instead of committing it; ` + "`inofctl zoning diff`" + ` shows the
staged edits and their visibility changes, ` + "`zoning commit`" + ` applies them together against the
revision the first was staged on, and ` + "`zoning abort`" + ` drops them. If someone committed since,
` + "`zoning diff`" + ` still lists the staged edits and ` + "`zoning rebase`" + ` moves them onto the configuration in
effect.

## Declarative zoning, history, audit, backup

` + "`zoning export`" + ` writes the whole configuration as one YAML file and ` + "`zoning apply -f FILE`" + ` makes the
fabric match it (member diff, access diff, question, one transaction; applying it again changes
nothing). Every commit is a journal entry that both reflectors keep (the last ` + "`history_size`" + `, 100):
` + "`zoning history`" + `, ` + "`zoning show --revision R`" + `, ` + "`zoning diff R1 R2`" + `, ` + "`zoning rollback R`" + ` and
` + "`audit`" + ` (who, from where, when, what; lost concurrent edits as conflicts) read it. ` + "`backup FILE`" + `
saves the store online; ` + "`inofd restore`" + ` puts it on a stopped reflector (docs/zoning.md, "Day-2
walkthrough"). The file holds the NQN pins under ` + "`pins:`" + ` when there are any; a file without that key (one
written before pins, or exported with none) leaves the pins as they are.

## NQN pins

A device declares its NQN itself, so a zone member ` + "`nqn.…`" + ` admits any device that claims that NQN, on
any port. ` + "`pin set NQN --at SWITCH:PORT`" + ` (repeatable; the switch's router-id and its access port) binds
the NQN to the ports where it may be claimed: a device claiming it anywhere else is in no zone and told
to no host, and every switch and reflector counts it, logs it and reports an event of kind ` + "`pin`" + `
(docs/zoning.md, "NQN pins"). ` + "`pin list`" + ` and ` + "`pin remove`" + ` read and drop pins; a pin is a zoning edit like
the others (dry run, question, ` + "`--stage`" + `, journal, rollback). ` + "`device show`" + ` lists the ports an NQN is
claimed on when there is more than one.

| FC / Huawei | inofctl |
|---|---|
| ` + "`zonecreate`, `zoneadd`, `zoneremove`, `zonedelete`" + ` | ` + "`zone create`, `zone add`, `zone remove`, `zone delete`" + ` |
| ` + "`alicreate`, `aliadd`" + ` | ` + "`alias create`, `alias add`" + ` |
| ` + "`cfgshow`" + ` | ` + "`zoning show`, `zone list`" + ` |
| ` + "`cfgsave` + `cfgenable`" + ` | ` + "`zoning commit`" + ` (or any change without ` + "`--stage`" + `) |
| ` + "`cfgtransabort`" + ` | ` + "`zoning abort`" + ` |
| ` + "`configupload`" + ` | ` + "`zoning export`" + `, ` + "`backup`" + ` |
| ` + "`default-zone enable`" + ` | ` + "`fabric set default-zone on`" + ` |

## Day two: one object, filters, watch

` + "`" + `device show ADDRESS` + "`" + ` tells everything the server knows about one device: role, protocol, NQN,
status and since when, the switch and port that report it (every switch, when more than one
does: a device that moved, a NIC on a shared segment), its zones, the targets a host sees or the
hosts told about a target (with why), and the events kept about it. ` + "`" + `session show PEER` + "`" + ` is
` + "`" + `show bgp neighbor` + "`" + `: state and uptime, router-id, source address, configured timers, End-of-RIB,
records received and advertised, the BFD session, the last time it went down. ` + "`" + `device list` + "`" + ` has a
PORT column, the switch interface the device is on (the NVMe-oF service port, which PORT showed
before, is SERVICE in ` + "`" + `-o wide` + "`" + `); ` + "`" + `-o wide` + "`" + ` adds columns (and lists zone and alias members
uncut), ` + "`" + `--no-headers` + "`" + ` leaves the heading row out. The list verbs (` + "`" + `device` + "`" + `, ` + "`" + `session` + "`" + `, ` + "`" + `bfd` + "`" + `,
` + "`" + `zone` + "`" + `, ` + "`" + `alias` + "`" + `, ` + "`" + `reflector list` + "`" + `) take ` + "`" + `--watch` + "`" + ` (` + "`" + `-w` + "`" + `): the list is printed again whenever it
changes, noticed from the event stream and by asking again every ` + "`" + `--watch-interval` + "`" + ` (5s).
` + "`" + `events` + "`" + ` keeps only some events with ` + "`" + `--kind` + "`" + ` (repeatable), ` + "`" + `--subject` + "`" + ` and ` + "`" + `--since` + "`" + ` (RFC 3339
or a duration: ` + "`" + `10m` + "`" + `).

## Output

` + "`" + `-o table` + "`" + ` (default), ` + "`" + `-o wide` + "`" + `, ` + "`" + `-o json` + "`" + ` or ` + "`" + `-o yaml` + "`" + `. Times in tables are RFC 3339 in UTC
with milliseconds (` + "`" + `2026-11-30T12:00:00.123Z` + "`" + `). An event line is: sequence number, time, kind,
subject, message, then in brackets only the attributes the message does not already say.

JSON and YAML answers are one envelope, versioned by ` + "`" + `apiVersion` + "`" + ` (` + "`" + `inofctl/v1` + "`" + `; a change of
this shape changes the version):

` + "`" + `` + "`" + `` + "`" + `
{"apiVersion": "inofctl/v1", "kind": "DeviceList", "items": [ ... ]}
{"apiVersion": "inofctl/v1", "kind": "Zone", "revision": "8a98727d11013d48", "item": { ... }}
` + "`" + `` + "`" + `` + "`" + `

A list kind (` + "`" + `DeviceList` + "`" + `, ` + "`" + `SessionList` + "`" + `, ` + "`" + `BFDSessionList` + "`" + `, ` + "`" + `ZoneList` + "`" + `, ` + "`" + `AliasList` + "`" + `,
` + "`" + `PinList` + "`" + `, ` + "`" + `VisibilityList` + "`" + `, ` + "`" + `MemberUseList` + "`" + `, ` + "`" + `ConflictList` + "`" + `, ` + "`" + `ProblemList` + "`" + `, ` + "`" + `PlatformList` + "`" + `,
` + "`" + `JournalEntryList` + "`" + `) carries its entries in ` + "`" + `items` + "`" + ` (` + "`" + `[]` + "`" + ` when there are none); any other kind
(` + "`" + `Device` + "`" + `, ` + "`" + `Session` + "`" + `, ` + "`" + `Why` + "`" + `, ` + "`" + `Zone` + "`" + `, ` + "`" + `Alias` + "`" + `, ` + "`" + `Zoning` + "`" + `, ` + "`" + `ZoningChange` + "`" + `, ` + "`" + `ZoningDiff` + "`" + `, ` + "`" + `Fabric` + "`" + `,
` + "`" + `Journal` + "`" + `, ` + "`" + `Reflectors` + "`" + `, ` + "`" + `LosslessProfile` + "`" + `, ` + "`" + `LosslessCheck` + "`" + `, ` + "`" + `Simulation` + "`" + `, ` + "`" + `Version` + "`" + `) its
object in ` + "`" + `item` + "`" + `. ` + "`" + `revision` + "`" + ` is the zoning revision the answer reflects, where there is one.
` + "`" + `events -o json` + "`" + ` prints one envelope of kind ` + "`" + `Event` + "`" + ` per line (` + "`" + `-o yaml` + "`" + `: one document per
event). Inside the envelope, field names are those of the proto file, numbers are numbers and
enums are spelled as the tables spell them (` + "`" + `host` + "`" + `, not ` + "`" + `ROLE_HOST` + "`" + `). Files meant to be edited
and fed back (` + "`" + `zoning export` + "`" + `, ` + "`" + `lossless show` + "`" + ` as YAML) stay plain files.

**Breaking change** (envelope ` + "`" + `inofctl/v1` + "`" + `): before it, ` + "`" + `device list` + "`" + `, ` + "`" + `session list` + "`" + ` and the
other lists printed a bare array, ` + "`" + `zone list` + "`" + ` an object ` + "`" + `{"revision", "zones"}` + "`" + ` and the single
objects their fields at the top. Scripts read ` + "`" + `.items` + "`" + ` (jq: ` + "`" + `.items[]` + "`" + `) or ` + "`" + `.item` + "`" + ` now.

Exit codes: 0 success, 1 the command failed (including a server error, printed with its gRPC
code), 2 usage or configuration error, 3 conflicts found (` + "`" + `audit --conflicts` + "`" + `). Shell completion
(` + "`" + `inofctl completion bash|zsh|fish|powershell` + "`" + `) completes zone and alias names, members
(aliases, registered addresses and NQNs), revisions, event kinds and ` + "`" + `-o` + "`" + ` values.

# Commands
`

// Markdown writes the command reference (docs/cli.md) for the tree of root.
func Markdown(root *cobra.Command, w io.Writer) error {
	var buf bytes.Buffer
	buf.WriteString(docIntro)
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		if !c.IsAvailableCommand() && c != root || c.IsAdditionalHelpTopicCommand() {
			return nil
		}
		c.DisableAutoGenTag = true
		var one bytes.Buffer
		if err := doc.GenMarkdownCustom(c, &one, anchor); err != nil {
			return fmt.Errorf("doc %s: %w", c.CommandPath(), err)
		}
		buf.WriteString("\n" + one.String())
		for _, sub := range c.Commands() {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	root.InitDefaultCompletionCmd()
	if err := walk(root); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// anchor turns cobra's page name (inofctl_zone_create.md) into the anchor
// of that command's section in the one page.
func anchor(page string) string {
	return "#" + strings.ReplaceAll(strings.TrimSuffix(page, ".md"), "_", "-")
}

// DocEnviron is the environment the reference is generated with, so that
// defaults read from it print as the variables they come from.
func DocEnviron() []string { return []string{"HOME=$HOME"} }
