package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/mcp"
	"github.com/logbook-dev/logbook/skills"
)

// toolRefPath is the generated tool reference, relative to this package.
var toolRefPath = filepath.Join("..", "..", "mcp", "TOOLS.md")

func init() {
	// Another test file of the package may define -update already.
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite generated files (mcp/TOOLS.md)")
	}
}

func updateFlag() bool {
	f := flag.Lookup("update")
	if f == nil {
		return false
	}
	v, _ := strconv.ParseBool(f.Value.String())
	return v
}

// TestToolReference renders the registered tool specs (mcp.Server.Tools:
// name, description, input fields with type, constraints and default, output
// fields) into mcp/TOOLS.md and fails if the committed file differs.
// Regenerate with: go test ./cmd/logbook -run TestToolReference -update
func TestToolReference(t *testing.T) {
	t.Parallel()
	l, err := boltstore.Open(filepath.Join(t.TempDir(), "ref.db"), boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	svc, err := commands.New(l, commands.Options{Skills: &skills.Set{}})
	if err != nil {
		t.Fatal(err)
	}
	got := renderToolReference(t, mcp.New(svc, mcp.Options{}).Tools())

	if updateFlag() {
		if err := os.MkdirAll(filepath.Dir(toolRefPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(toolRefPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(toolRefPath)
	if err != nil {
		t.Fatalf("%v: generate it with go test ./cmd/logbook -run TestToolReference -update", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("mcp/TOOLS.md is out of date with the registered tools: regenerate it with\n\tgo test ./cmd/logbook -run TestToolReference -update\n%s", refLineDiff(string(want), string(got)))
	}
}

// refSchema is the part of a published JSON Schema the reference shows.
type refSchema struct {
	Type          any        `json:"type"` // a name or a list of names
	Description   string     `json:"description"`
	Enum          []string   `json:"enum"`
	Default       any        `json:"default"`
	MinLength     *int       `json:"minLength"`
	MaxLength     *int       `json:"maxLength"`
	Pattern       string     `json:"pattern"`
	Format        string     `json:"format"`
	Minimum       *float64   `json:"minimum"`
	Maximum       *float64   `json:"maximum"`
	MaxItems      *int       `json:"maxItems"`
	MinProperties *int       `json:"minProperties"`
	Items         *refSchema `json:"items"`
	Required      []string   `json:"required"`
	// Properties keeps the published order, which json.Unmarshal into a map would lose.
	Properties refProps `json:"properties"`
}

type refProp struct {
	Name   string
	Schema *refSchema
}

type refProps []refProp

func (p *refProps) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		var s refSchema
		if err := dec.Decode(&s); err != nil {
			return err
		}
		*p = append(*p, refProp{tok.(string), &s})
	}
	return nil
}

func (s *refSchema) typeName() string {
	switch t := s.Type.(type) {
	case string:
		if t == "array" && s.Items != nil {
			return "array of " + s.Items.typeName()
		}
		return t
	case []any:
		var names []string
		for _, x := range t {
			name := fmt.Sprint(x)
			if name == "array" && s.Items != nil {
				name += " of " + s.Items.typeName()
			}
			names = append(names, name)
		}
		return strings.Join(names, " or ")
	}
	return "any"
}

func refNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// constraints lists what the schema restricts, in words.
func (s *refSchema) constraints() []string {
	var c []string
	if len(s.Enum) > 0 {
		c = append(c, "one of `"+strings.Join(s.Enum, "`, `")+"`")
	}
	switch {
	case s.MinLength != nil && s.MaxLength != nil:
		c = append(c, fmt.Sprintf("%d–%d chars", *s.MinLength, *s.MaxLength))
	case s.MaxLength != nil:
		c = append(c, fmt.Sprintf("≤ %d chars", *s.MaxLength))
	case s.MinLength != nil:
		c = append(c, fmt.Sprintf("≥ %d chars", *s.MinLength))
	}
	switch {
	case s.Minimum != nil && s.Maximum != nil:
		c = append(c, refNum(*s.Minimum)+"–"+refNum(*s.Maximum))
	case s.Minimum != nil:
		c = append(c, "≥ "+refNum(*s.Minimum))
	case s.Maximum != nil:
		c = append(c, "≤ "+refNum(*s.Maximum))
	}
	if s.Pattern != "" {
		c = append(c, "pattern `"+s.Pattern+"`")
	}
	if s.Format != "" {
		c = append(c, "format "+s.Format)
	}
	if s.MaxItems != nil {
		c = append(c, fmt.Sprintf("≤ %d items", *s.MaxItems))
	}
	if s.Items != nil {
		for _, ic := range s.Items.constraints() {
			c = append(c, "each "+ic)
		}
	}
	return c
}

// refFields writes one row per output field, nested ones by their path
// (`db.path`, `tasks[].title`).
// refFields writes one row per output field, at any depth; "always" marks
// the fields the outputSchema requires of their object.
func refFields(b *bytes.Buffer, prefix string, props refProps, required []string) {
	for _, p := range props {
		path := prefix + p.Name
		always := ""
		if slices.Contains(required, p.Name) {
			always = "yes"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", path, p.Schema.typeName(), always, refCell(p.Schema.Description))
		switch {
		case len(p.Schema.Properties) > 0:
			refFields(b, path+".", p.Schema.Properties, p.Schema.Required)
		case p.Schema.Items != nil && len(p.Schema.Items.Properties) > 0:
			refFields(b, path+"[].", p.Schema.Items.Properties, p.Schema.Items.Required)
		}
	}
}

func refCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// renderToolReference writes the reference in Markdown.
func renderToolReference(t *testing.T, specs []mcp.ToolSpec) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("# logbook tool reference\n\n")
	b.WriteString("<!-- Generated from the registered tool specs by TestToolReference (cmd/logbook/e2e_toolref_test.go).\n")
	b.WriteString("     Do not edit: regenerate with  go test ./cmd/logbook -run TestToolReference -update -->\n\n")
	fmt.Fprintf(&b, "`logbook serve` publishes %d tools over MCP (stdio). This page is rendered from the schemas the server\n", len(specs))
	b.WriteString("itself publishes in `tools/list`, so it cannot drift from them.\n\n")
	b.WriteString("Every result carries the same JSON as `structuredContent` and as one text item:\n")
	b.WriteString("`{\"ok\":true,\"data\":{…}}` on success, `{\"ok\":false,\"error\":{\"code\",\"message\",\"details\"}}` with\n")
	b.WriteString("`isError: true` on failure (invalid arguments included). The *Returns* tables below are the fields of `data`;\n")
	b.WriteString("those marked *always* are in every success (the outputSchema requires them of their object), the others\n")
	b.WriteString("may be absent (or null, where the type says so). Results may gain fields: no output object is closed.\n")
	b.WriteString("Every call, read or write, valid or not, is recorded as one `tool.called` event in the ledger.\n")
	b.WriteString("Input objects reject unknown fields. An integer may be written as any JSON number whose value is whole\n")
	b.WriteString("(`10`, `10.0`, `1e1`), as JSON Schema counts integers, and within 64 bits (an `offset` or `as_of_seq`\n")
	b.WriteString("beyond 9223372036854775807 is invalid input). Beyond what a schema can say, the arguments\n")
	fmt.Fprintf(&b, "nest at most %d levels (the arguments object is level 1) and hold at most %s object members and\n",
		domain.MaxDepth, thousands(domain.MaxValues))
	b.WriteString("array items in all levels together (arrays without a `maxItems` included); more is invalid input.\n")
	b.WriteString("Text is checked beyond its schema too: no string holds an unpaired UTF-16 surrogate escape; one-line\n")
	b.WriteString("text (titles, names, labels, tags, summaries, `branch`, `query`, file paths) holds no control character nor line or paragraph separator (U+2028, U+2029)\n")
	b.WriteString("and other text (descriptions, content, reasons, details, tests, blockers, searches) none but tab, newline and\n")
	b.WriteString("carriage return; one-line text, `content`, `pattern` and `context` must not be only whitespace or\n")
	b.WriteString("invisible characters (U+200B, U+FEFF, bidi marks…). An error quotes at most 64 characters of a name\n")
	b.WriteString("the client sent (an argument, a key at any depth, a tool), then `…`: an issue's `path` too.\n")
	b.WriteString("`metadata` is free-form: its keys and strings are kept as sent, control characters included, and\n")
	b.WriteString("only its size and depth are bounded (the views and the console blank what a terminal would act on).\n\n")

	b.WriteString("At initialize the server sends these instructions, for the model to read before any tool:\n\n")
	for _, line := range strings.Split(mcp.Instructions, "\n") {
		b.WriteString("> " + line + "\n")
	}
	b.WriteString("\n")

	var codes []string
	b.WriteString("| tool | title | kind | summary |\n|---|---|---|---|\n")
	for _, sp := range specs {
		kind := "write"
		if sp.ReadOnly {
			kind = "read"
		}
		summary := sp.Description
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s |\n", sp.Name, sp.Name, refCell(sp.Title), kind, refCell(summary))
	}
	b.WriteString("\n")

	for _, sp := range specs {
		var in, out refSchema
		if err := json.Unmarshal(sp.InputSchema, &in); err != nil {
			t.Fatalf("%s input schema: %v", sp.Name, err)
		}
		if err := json.Unmarshal(sp.OutputSchema, &out); err != nil {
			t.Fatalf("%s output schema: %v", sp.Name, err)
		}
		fmt.Fprintf(&b, "## %s\n\n", sp.Name)
		fmt.Fprintf(&b, "**%s.** ", sp.Title)
		if sp.ReadOnly {
			b.WriteString("*Read-only* (still audited).")
		} else {
			b.WriteString("*Mutating* (answers `ERR_READ_ONLY` on a `--read-only` server).")
		}
		b.WriteString(" " + sp.Description + "\n\n")
		if len(in.Properties) == 0 {
			b.WriteString("**Arguments:** none (`{}`).\n\n")
		} else {
			b.WriteString("**Arguments**")
			if in.MinProperties != nil && *in.MinProperties > 1 {
				fmt.Fprintf(&b, " (at least %d fields in all)", *in.MinProperties)
			}
			b.WriteString("\n\n| field | type | required | constraints | default | description |\n|---|---|---|---|---|---|\n")
			for _, p := range in.Properties {
				req := ""
				if slices.Contains(in.Required, p.Name) {
					req = "yes"
				}
				def := ""
				if p.Schema.Default != nil {
					raw, _ := json.Marshal(p.Schema.Default)
					def = "`" + string(raw) + "`"
				}
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", p.Name, p.Schema.typeName(), req,
					refCell(strings.Join(p.Schema.constraints(), "; ")), def, refCell(p.Schema.Description))
			}
			b.WriteString("\n")
		}
		var data *refSchema
		for _, p := range out.Properties {
			switch p.Name {
			case "data":
				data = p.Schema
			case "error":
				for _, ep := range p.Schema.Properties {
					if ep.Name == "code" && codes == nil {
						codes = ep.Schema.Enum
					}
				}
			}
		}
		if data != nil && len(data.Properties) > 0 {
			b.WriteString("**Returns**\n\n| field | type | always | description |\n|---|---|---|---|\n")
			refFields(&b, "", data.Properties, data.Required)
			b.WriteString("\n")
		}
	}
	if len(codes) > 0 {
		b.WriteString("## Error codes\n\n")
		b.WriteString("A failure's `error.code` is one of these stable codes (new ones may be added, none renamed):\n")
		for _, c := range codes {
			fmt.Fprintf(&b, "`%s`", c)
			if c != codes[len(codes)-1] {
				b.WriteString(", ")
			}
		}
		b.WriteString(".\n")
	}
	b.WriteString(choices)
	return b.Bytes()
}

// choices are the behaviours CONTRACT.md leaves open, as logbook decides them.
const choices = `
## Behaviour the contract leaves open

- **Audit record.** Every tools/call the server takes appends one ` + "`tool.called`" + ` event:
  tool, SHA-256 of the arguments, outcome code, SHA-256 of the exact reply bytes, duration, client
  name; its subjects are the ids the arguments name (` + "`task_id`, `parent_id`, `source_task_id`, `session_id`" + `).
  The arguments hash (` + "`args_sha256`" + `, payload versions 2 to 4; v3 and v4 store the digests as 32 bytes
  and the payload as the array of its fields, v4 the tool as a code, docs/AUDITING.md; shown as hex and by name) is the SHA-256 of the arguments' RFC 8785
  (JCS) canonical form — members sorted by UTF-16 code units, no insignificant space, numbers in
  ECMAScript form (` + "`1.50`" + ` → ` + "`1.5`" + `, ` + "`1E2`" + ` → ` + "`100`" + `), strings with only ` + "`\\`" + `, ` + "`\"`" + ` and control
  characters escaped; empty arguments are ` + "`{}`" + `; arguments that are not I-JSON (invalid JSON or
  UTF-8, an unpaired surrogate escape, a repeated member name, a number beyond a double) are hashed
  as received. Version 1 events (older ledgers) hashed Go's encoding/json re-encoding instead; both
  rules are ` + "`commands.ArgsSHA256`" + `. The first
  call of each server process also appends ` + "`skills.loaded`" + ` (the skill files it loaded, with
  their SHA-256). Requests the MCP SDK itself refuses before any tool runs are answered but not
  recorded: a request other than ping before initialize and a second initialize (-32600), params
  it cannot read, such as a tool name of another type than a string (-32602; a ` + "`null`" + ` or missing name
  is read as ` + "`\"\"`" + `, below), a missing params object (-32600), the same
  over HTTP, a request whose id is already in flight (-32600 under that id), a tools/call
  sent as a notification (no id, no answer; over HTTP 202 with no body), and over HTTP at revision 2026-07-28 a request whose
  ` + "`Mcp-Method`" + ` or ` + "`Mcp-Name`" + ` header is missing or differs from its body (400, -32020 under its id).
  That revision cannot carry a tool name ` + "`\"\"`" + `: the SDK takes the empty ` + "`Mcp-Name`" + ` for a missing one, so
  such a call is refused there, not recorded, while over stdio and older revisions it is answered
  ` + "`ERR_INVALID_INPUT`" + ` (unknown tool, at ` + "`name`" + `) and recorded; ` + "`serve --connect`" + ` speaks that
  revision to the server, so through it the call gets a JSON-RPC error (-32020) saying it was not
  recorded. So is, at that revision and through ` + "`serve --connect`" + `, a call whose arguments hold a
  number beyond a double (` + "`1e400`" + `): the SDK cannot read the name beside them (400, -32020, not
  recorded), where over stdio and older revisions it is answered and recorded. Through
  ` + "`serve --connect`" + ` too, a tool name holding a control character (which the ` + "`Mcp-Name`" + ` header
  cannot carry) is answered with a JSON-RPC error (-32034) saying the call was not sent and not recorded,
  where over stdio it is ` + "`ERR_INVALID_INPUT`" + ` (unknown tool) and recorded. And a call whose request, as
  ` + "`serve --connect`" + ` forwards it, is over the server's ` + "`--max-body-bytes`" + ` (4 MiB by default; the bridge adds
  the stdio client's name to each call, so a message within a few hundred bytes of stdio's own 4 MiB may
  be) is refused there (413) and not recorded, and answered with a JSON-RPC error saying so (-32032), where over
  stdio it is answered and recorded; the bridge serves the calls after it. A line that is not JSON gets -32700; a message over 4 MiB or nested deeper
  than 1,000 levels gets -32600, by id where one can be read, and so does one holding more than 256 KiB
  besides a tool call's name and arguments (` + "`_meta`" + `, another method's params, capabilities). Request ids (a string or a number,
  at most 1,024 bytes, given once; anything else, null included, which MCP forbids, gets -32600 with
  id null, over HTTP too: 400, or in a batch its entry) are echoed byte for byte and
  compared as bytes, over HTTP too (a batch's included): ` + "`1`, `1.0` and `\"1\"`" + ` are three ids. ` + "`notifications/cancelled`" + ` is ignored:
  a call that reached the server runs to its end, is recorded and answered.
- **Identity.** ` + "`--agent`" + `, else ` + "`LOGBOOK_AGENT`" + `, else the client's ` + "`clientInfo.name`" + ` with
  control, format and other invisible characters (such as U+200B, U+202E, U+3164; the joiners
  U+200C and U+200D, variation selectors and a flag's tags are kept only where they join or
  select something: "ali\u200dce" is "alice") and invalid UTF-8 dropped, cut to 128 characters and
  trimmed, else (nothing visible left)
  ` + "`unknown`" + `.
- **Ids.** An argument that names a task, session or learning is at most 32 characters (longer:
  invalid input). One that names nothing is not found, and so is one given as ` + "`\"\"`" + `,
  optional or required: an empty ` + "`task_id`" + `, ` + "`parent_id`" + ` or ` + "`source_task_id`" + ` is
  ` + "`ERR_TASK_NOT_FOUND`" + `, an empty ` + "`session_id`" + ` ` + "`ERR_SESSION_NOT_FOUND`" + `, an empty learning id
  invalid input; it is never taken for an argument left out.
- **Concurrency.** Calls in flight on one session run concurrently and share commits; a client
  that needs one call after another waits for the first reply.
- **Several processes on one ledger file.** ` + "`logbook serve`" + ` processes on the same file hand their
  calls to the one holding the file (Linux), which records each as if its sender had run it. If
  that process exits, is stopped, or answers nothing for a minute past this process's ` + "`--lock-timeout`" + ` without answering a call it was handed, the call is answered ` + "`ERR_STORAGE`" + `
  with the message "the call's outcome is unknown: it may or may not have been recorded" and
  ` + "`details.reason`" + ` saying how to check; it is never sent again: look for what it writes
  before calling again. A call during which the disk failed a write or a flush of the ledger gets
  the same answer (its reason says so), and the process then answers ` + "`ERR_STORAGE`" + ` to every call
  until it is restarted (opening the ledger recovers it from its journal). So does a call whose
  events a NATS JetStream stream (` + "`logbook server --store`" + `) neither took nor refused in time. Any other
  ` + "`ERR_STORAGE`" + ` means nothing of the call was recorded: on a full disk (or a ledger file that may
  grow no more) its reason says "the disk is full", and calls succeed again once there is room,
  the process not restarted (on a copy-on-write file system, btrfs, where even an overwrite needs
  room, a full disk may also leave a call's outcome unknown: its reason then begins "the disk is
  full, and"). A call that finds the file holding no
  projections (a ` + "`logbook rebuild`" + ` killed during its swap) waits while the process folds them
  again from the log (seconds on a large ledger), then runs.
- **` + "`serve --connect`" + `.** The bridge answers each tools/call with the server's own answer: its
  result (a call out of a scoped token's tools is ` + "`ERR_FORBIDDEN`" + `, recorded, as over HTTP), or a
  JSON-RPC error the server wrote, passed on with its code (-32020 above, say). A call the server
  gave no answer of its own gets a JSON-RPC error whose code says what became of it (its message
  says so too, and what to do; the bridge's stderr has the details), and the bridge goes on serving:
  - -32031: the server refused the bridge's token (401: unknown, or revoked since the bridge
    started; every later call will be refused too: restart the bridge with a valid token). Not recorded.
  - -32032: the server refused the request before any tool ran (another 4xx: 413, a call larger
    than its ` + "`--max-body-bytes`" + `; 403, a ` + "`Host`" + ` it refuses), or redirected it (a 3xx, which the
    bridge does not follow: its token goes to the ` + "`--connect`" + ` URL only). Not recorded.
  - -32033: the server turned the call away for now (429, or 503 with ` + "`Retry-After`" + `) each time the
    bridge sent it, until the call's minute was up. Not recorded: call again shortly.
  - -32034: the call was never sent (no connection could be made: the server stopped or
    restarting; a tool name no header can carry; the bridge's session with the server ended,
    after an answer it could not read, the call that got it -32035: restart the bridge). Not recorded.
  - -32035: the call was sent and no answer came (the connection failed: the server killed
    mid-call; no answer within a minute; a 5xx from the server or a proxy in front). It may or may
    not have been recorded: look for what it writes before calling again.

  ` + "`tools/list`" + ` is answered from the list the server gave when the bridge connected, after a
  revocation too: it is the server's list for that token, which the client already has and which
  reveals nothing, and every call still goes to the server, which decides (-32031). ` + "`serve --connect`" + `
  to a URL where no logbook MCP endpoint answers exits 2 before serving, saying what it found there:
  nothing (connection refused), not a logbook MCP endpoint (the status and content type it
  answered the bridge's POST with: 405 for ` + "`http://HOST:PORT/`" + ` rather than ` + "`/mcp`" + `, 200 and JSON for
  ` + "`/healthz`" + `, a plain HTTP server given an ` + "`https://`" + ` URL, the 400 of an HTTPS server given an
  ` + "`http://`" + ` one), a TLS certificate not trusted, or the token refused (401).
- **task_update.** A closed task answers ` + "`ERR_TASK_CLOSED`" + ` even for a request that would
  change nothing. ` + "`blocked_reason`" + ` on a task that is not (becoming) blocked is invalid input.
  ` + "`status: \"blocked\"`" + ` needs a non-blank ` + "`blocked_reason`" + ` in the same request even on a task
  already blocked: it is a rule of the arguments, checked before the task is read, so the same
  arguments get the same answer whatever the task's state (a client can check it before sending).
  With its current reason the request is one to the current state: no change, no error.
  The progress warning is given when progress is 100 in backlog, todo, in_progress or blocked.
- **task_create.** Sub-tasks nest at most 1,000 levels deep (deeper: invalid input), which is why
  ` + "`ERR_CIRCULAR_DEPENDENCY`" + ` cannot occur: a parent is set only at creation, to a task that
  exists. The code stays reserved.
- **task_get.** ` + "`as_of_seq`" + ` beyond the ledger head is invalid input; 0 (or any seq before the
  task existed) is ` + "`ERR_TASK_NOT_FOUND`" + `.
- **task_list.** An unknown project gives an empty list. An empty ` + "`status`" + ` or ` + "`priority`" + ` list, and a
  ` + "`search`" + ` of no words (empty, or only spaces), filter nothing, as if left out. ` + "`created_after`/`created_before`" + ` are
  exclusive RFC 3339 date-times (offsets up to ±23:59; a leap second, 23:59:60 UTC, is taken as the last
  instant of its day). ` + "`search`" + ` words may be split between title and description. Ties in any sort
  are broken by creation order, ascending. ` + "`updated`" + ` and ` + "`created`" + ` sort by ledger sequence.
  Pages have no cursor (the contract gives ` + "`limit`" + ` and ` + "`offset`" + `; of the task tools only ` + "`task_get`" + ` takes
  ` + "`as_of_seq`" + `): ` + "`offset`" + ` counts into the list as it stands at each call, so in the default order
  (` + "`updated`" + `, descending) a task created or changed between two pages moves the rest, and one may be
  listed twice or never. Paged with ` + "`sort_by: \"created\", sort_order: \"asc\"`" + `, creations move no page:
  a new task sorts after every task there, whichever process creates it (a filter on what changes,
  such as ` + "`status`" + `, can still move one); a ` + "`total_count`" + ` that grew says tasks were created meanwhile.
- **skill_list.** An empty ` + "`search`" + ` or ` + "`capability`" + ` filters nothing, as if left out (no skill
  declares an empty capability). A ` + "`version`" + ` written as a bare number or date (` + "`version: 1.10`" + `,
  ` + "`version: 2024-01-01`" + `) is kept as written; a capability listed twice is kept once.
- **task_next_actions.** Without ` + "`project`" + ` and without ` + "`--project`" + `, all projects
  (` + "`project: null`" + ` in the answer). ` + "`limit`" + ` bounds ` + "`next_actions`" + ` only: with ` + "`include_blocked`" + `,
  ` + "`blocked`" + ` lists every blocked task of the project (of every project, without one), in creation
  order, and is ` + "`[]`" + ` when there is none.
- **thought_record.** ` + "`type`" + ` and ` + "`content`" + ` are required. ` + "`invalid_links`" + ` of
  thought_record_list are chain positions within each thought's own task.
- **seq.** Each task and thought of a list (` + "`task_list`" + `'s ` + "`tasks`" + `, ` + "`task_next_actions`" + `'
  ` + "`next_actions`" + ` and ` + "`blocked`" + `, ` + "`thought_record_list`" + `'s ` + "`thoughts`" + `) reports its ` + "`seq`" + `, as §1
  asks of every domain object though the per-tool lists leave it out: a task's is the one ` + "`task_get`" + `
  reports at that moment, a thought's the one ` + "`thought_record`" + ` returned. An audit session's is
  ` + "`start_seq`" + ` (its start event) and, once sealed, ` + "`merkle_finalize`" + `'s ` + "`ledger_size`" + ` (the finalize
  event's); skills are not ledger objects and have none.
- **Sessions.** A session's leaves are its start event, then the events concerning its task (and,
  deep, the task's descendants) — task and thought events and tool.called events naming the task —
  and thoughts recorded with its id. The start call's own tool.called names the task, so it is the
  second leaf; a call naming no task (such as ` + "`task_list`" + `, or ` + "`merkle_root`" + ` with only a
  ` + "`session_id`" + `) is none. Other sessions' start and finalize events are not leaves.
  ` + "`merkle_finalize`" + ` with ` + "`task_id`" + ` seals the start event and the leaves concerning that
  task, so no root is empty. ` + "`merkle_root`" + ` of an open session reports ` + "`as_of_seq`" + ` = the
  head before the call's own record; of a finalized one, the finalize event's seq (and ` + "`as_of`" + ` its
  ` + "`finalized_at`" + `).
- **audit_verify_chain.** By task: the task's own events and its thoughts (not the tool.called
  events naming it). ` + "`broken_links`" + ` entries also carry ` + "`problem`" + ` (content changed, link
  broken, missing event, …). ` + "`total_records`" + ` counts the records expected, missing ones
  included.
- **Read-only.** A ` + "`--read-only`" + ` server refuses the nine mutating tools with
  ` + "`ERR_READ_ONLY`" + ` but still records every call. Arguments are checked first: a mutating call
  whose arguments are invalid answers ` + "`ERR_INVALID_INPUT`" + ` there too.
- **Server mode** (` + "`logbook server`" + `, MCP over Streamable HTTP). Every request carries a bearer
  token; the actor of every event is the token's agent, and the client's ` + "`clientInfo.name`" + ` is
  recorded only as the unverified ` + "`client_claim`" + ` of tool.called, beside the token's
  ` + "`token_sha256`" + `. A tool outside the token's scope is not listed and answers ` + "`ERR_FORBIDDEN`" + `
  (` + "`details.tool`" + `); a read-only token gets ` + "`ERR_READ_ONLY`" + ` from the mutating tools. Both
  are recorded like every call. ` + "`ERR_FORBIDDEN`" + ` comes before the arguments are checked, for a name no
  tool has too: a tool hidden from the caller's list shows none of its rules, and an unknown name and
  an unlisted tool answer alike; ` + "`ERR_READ_ONLY`" + ` comes after them, as on a ` + "`--read-only`" + ` server,
  the tool being listed. A call whose token was revoked after the request's checks and before the
  call committed (it waited for the file) runs nothing and answers ` + "`ERR_FORBIDDEN`" + ` too, recorded. Requests refused over HTTP before any tool runs, none of them recorded: one
  in a session whose ` + "`MCP-Protocol-Version`" + ` header names another revision than the session
  negotiated (400, -32600 by its id; no header is taken; 2026-07-28 naming an open session of another
  revision too; a session gone is 404 whatever the header, another token's 403, the sessionless revision's requests included), and a batch (revision 2025-03-26) in which
  two requests share an id (400, -32600 with id null, none of it served), and a body that is not one
  JSON value — bytes after a message, two messages, not JSON — (400, -32700 with id null, as stdio
  answers a line that is not JSON), and one that is JSON but no JSON-RPC message — a method not a string, null
  included, a member given twice, an id with neither a method nor one of result and error — (400, -32600 by its
  id, else null, or -32602 for a member of params given twice, as stdio answers it; in a batch its entry, the
  others served; an empty batch, id null). A call sent after
  initialize is answered but before ` + "`notifications/initialized`" + ` is served, as on stdio: over
  HTTP the two are separate requests, in no order the transport fixes.
- **finding_record.** Ids ` + "`F-0001`" + ` on. A finding is one ` + "`finding.recorded`" + ` event and is never
  edited; closed tasks take findings. It carries the task's project. A path in ` + "`files`" + ` is
  refused (at ` + "`files[i]`" + `) when it is absolute (leading ` + "`/`" + ` or ` + "`\\`" + `, or a drive letter such as
  ` + "`C:`" + `), has an empty or ` + "`..`" + ` segment (split at ` + "`/`" + ` and ` + "`\\`" + `), holds a control character or
  is over 1,024 characters. A path is written in one spelling, its segments joined by ` + "`/`" + ` without
  ` + "`.`" + ` segments (` + "`lexer\\scan.go`" + ` and ` + "`./lexer/scan.go`" + ` are ` + "`lexer/scan.go`" + `), and duplicates are removed.
- **learning_record.** Ids ` + "`L-0001`" + ` on. Quality gates, all ` + "`ERR_INVALID_INPUT`" + `: ` + "`pattern`" + ` at least 50
  characters and 6 distinct words, ` + "`context`" + ` at least 100 characters and 12 distinct words
  (padding such as one word repeated does not pass; in a script written without spaces — Chinese,
  Japanese, Korean, Thai, Lao, Khmer, Myanmar — each character is a word); the project must have a task
  (` + "`ERR_PROJECT_NOT_FOUND`" + `); ` + "`source_task_id`" + ` must exist (` + "`ERR_TASK_NOT_FOUND`" + `) and be of that
  project. **Near-duplicate** (` + "`ERR_DUPLICATE`" + `, ` + "`details: {existing_id, similarity}`" + `, the most
  similar one): the text is pattern and context together, lower-cased and cut into words (runs of
  letters and digits; each character of such a script); its shingles are the distinct pairs of consecutive words; two learnings are
  near-duplicates when the Jaccard similarity of their shingle sets is at least **0.6**. Only live
  (not superseded) learnings of the same project count. Why 0.6 and word pairs: changing one word
  of an n-word text removes at most two of its n−1 pairs, so a resubmission with a few words
  changed or a clause added stays far above 0.6 (0.74 in the tests for two changed words and an
  added clause), while two different lessons about the same subsystem share words but few pairs
  (0.09 in the tests); single words would make every learning about one subsystem look alike.
  To replace a learning with a reworded one, pass ` + "`supersedes`" + `: that learning is left out of the
  comparison and marked superseded by the new one in the same commit.
- **learning_supersede.** Both learnings must exist, be live, differ and be of the same project
  (otherwise ` + "`ERR_INVALID_INPUT`" + ` at the offending field). The old learning stays in the log as
  written; the projection marks it superseded (by whom, at which seq).
- **Memory.** Ids ` + "`M-0001`" + ` on, one per version. A key lives in a namespace: scope ` + "`global`" + ` (one
  for the ledger), ` + "`project`" + ` (the ` + "`project`" + ` argument, else the server's ` + "`--project`" + `, else invalid
  input; the project must have a task), or ` + "`agent`" + ` (the calling actor, as recorded in the
  envelope: an agent reads and writes only its own). Versions count from 1 in each namespace.
  ` + "`memory_read`" + ` of a key never written (or not yet at ` + "`as_of_seq`" + `) answers ` + "`found: false`" + `,
  ` + "`memory: null`" + `; ` + "`as_of_seq`" + ` beyond the head is invalid input. The project's task is looked
  for at the ledger's head, as ` + "`knowledge_search`" + ` looks: with ` + "`as_of_seq`" + `, a project begun after it
  answers ` + "`found: false`" + `, not ` + "`ERR_PROJECT_NOT_FOUND`" + `. ` + "`memory_history`" + ` without
  ` + "`scope`" + ` lists every namespace of the key, other agents' included (the ledger hides nothing from
  its readers), in ledger order; with ` + "`scope`" + ` project it lists the one project namespace
  that memory_read would read (the ` + "`project`" + ` argument, else the server's ` + "`--project`" + `, else
  invalid input); its ` + "`project`" + `, like the others', must have a task
  (` + "`ERR_PROJECT_NOT_FOUND`" + `: a mistyped slug is not taken for a key never written).
- **knowledge_search.** The index is a projection (space ` + "`knowledge_index`" + `, package
  ` + "`search`" + `), folded in the commit that appends the events and rebuilt from the log like every
  other space: thoughts (content, blockers; the task's project), findings (summary, details,
  files), learnings (pattern, context, tags) while they are live, and memory (key, content),
  only the latest version of each key (project memory has its project; global and agent memory
  none, so they are found only with ` + "`cross_project`" + ` or without a project filter). Words are
  composed (NFKC: an accent typed apart, a ligature or full-width letters find the word typed
  plainly) and case-folded as Unicode folds them in full (a word in capitals finds it in any case: ΟΔΌΣ
  finds οδός, STRASSE finds Straße; the Turkish İ and ı are i), the optional marks of Arabic and Hebrew
  left out (vowel points, cantillation, the tatweel: مرحبا finds مَرْحَبًا), any other combining mark kept in its word,
  stop words dropped and English words Snowball-stemmed; text written without spaces (Chinese,
  Japanese, Thai, Lao, Khmer, Myanmar; Korean too) is indexed by its characters and their overlapping pairs, so 数据库 is
  found inside a sentence and a query of one character finds it anywhere; ranking is BM25 (k1 1.2, b 0.75), ties
  newest first. The project searched is ` + "`project`" + `, else the server's ` + "`--project`" + `, else every
  project; ` + "`cross_project: true`" + ` searches every project instead of ` + "`--project`" + `, and beside a
  ` + "`project`" + ` is invalid input (at ` + "`cross_project`" + `: the request asks for one project and for all).
  A project searched must have a task (else ` + "`ERR_PROJECT_NOT_FOUND`" + `, as ` + "`task_next_actions`" + ` and
  ` + "`learning_record`" + ` answer): everything indexed under a project needs one, so an unknown project,
  a mistyped slug say, has no knowledge, and an empty answer would read as "nothing matches"
  (` + "`task_list`" + `'s ` + "`project`" + ` is a filter among others, and gives an empty list). It is checked
  against the ledger's head: with ` + "`as_of_seq`" + `, a project begun after it has no hits. ` + "`as_of_seq`" + ` hides what was recorded
  after that seq, from the hits and from BM25's figures alike (the number of documents, their mean
  length, each word's document frequency), so the same search at the same seq ranks and scores the
  same whatever is added later; what was taken out of the index since (a superseded learning, a
  replaced memory version) is not brought back and no longer counts, so such a removal does change
  the scores of a search as of an earlier seq: ` + "`memory_read`" + ` with ` + "`as_of_seq`" + ` reads a past
  version. A
  query of stop words only finds nothing. Each hit's ` + "`hash`" + ` and ` + "`seq`" + ` are its event's, for
  ` + "`logbook prove inclusion --seq`" + `.
`

// refLineDiff shows the first differing lines of want and got.
func refLineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 10; i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			fmt.Fprintf(&out, "line %d:\n  committed: %s\n  generated: %s\n", i+1, a, b)
			shown++
		}
	}
	return out.String()
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
