package logjsonl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/text"
)

const (
	// DefaultMaxText is the default number of bytes of a fallback line or a
	// tool output that Render shows.
	DefaultMaxText = 2000
	// DefaultPoll is Follow's default polling interval.
	DefaultPoll = 250 * time.Millisecond
	// renderMaxLine bounds the bytes of one log line Render parses; a longer
	// line is shown cut, as raw text.
	renderMaxLine = 8 << 20
)

// RenderOptions controls Render and Follow.
type RenderOptions struct {
	// Raw prints the JSONL as it is.
	Raw bool
	// Color adds ANSI colours: set it only when writing to a terminal.
	Color bool
	// Verbose also shows successful tool results, allowed bd calls,
	// thinking blocks, tokens and lines Render otherwise skips.
	Verbose bool
	// Location is the time zone of the times shown; nil means time.Local.
	Location *time.Location
	// MaxText is how many bytes of a fallback line or a tool output are
	// shown; 0 means DefaultMaxText. The agent's own text is never cut.
	MaxText int
	// Poll is how often Follow looks for new lines; 0 means DefaultPoll.
	Poll time.Duration
	// Worker, when set, shows only that worker's lines (see WorkerKey)
	// and the run's own, which belong to no worker.
	Worker string
}

// Render writes the run log read from r for a person: for each iteration a
// header (number, issue id and title, attempt n/N), the agent's text, each
// tool call on one line (for a shell, the command), denials highlighted,
// and the iteration's result (outcome, duration, turns, cost). It
// understands ralphd's loop_meta and agent_output records; every other
// line is the agent's, which the backend named in run_start reads (see
// agent.NewLogParser), or, in a log that names none, the first backend
// whose stream the line is. A line no backend reads is shown as raw text.
// Lines that are not JSON do not stop it. With opts.Raw it copies r
// unchanged.
func Render(w io.Writer, r io.Reader, opts RenderOptions) error {
	if opts.Raw {
		if _, err := io.Copy(w, r); err != nil {
			return fmt.Errorf("copy run log: %w", err)
		}
		return nil
	}
	rd := newRenderer(w, opts)
	lr := newLineReader(r, renderMaxLine)
	for {
		line, total, err := lr.next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return fmt.Errorf("read run log: %w", err)
			}
			if rest, n := lr.rest(); n > 0 {
				rd.line(rest, n)
			}
			rd.finish()
			return rd.flush()
		}
		rd.line(line, total)
		if rd.err != nil {
			return rd.flush()
		}
	}
}

// Follow renders the run log at path like Render and then waits for new
// lines, polling every opts.Poll, until the run_end event has been shown
// (it returns nil) or ctx is done (it returns ctx.Err()). A line still
// being written is shown once it is complete. With opts.Raw it prints the
// bytes as they are.
func Follow(ctx context.Context, path string, w io.Writer, opts RenderOptions) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open run log: %w", err)
	}
	defer f.Close()
	poll := opts.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	wait := func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			return nil
		}
	}
	if opts.Raw {
		return followRaw(f, w, wait)
	}
	rd := newRenderer(w, opts)
	lr := newLineReader(f, renderMaxLine)
	for {
		line, total, err := lr.next()
		if err == nil {
			rd.line(line, total)
			if rd.ended || rd.err != nil {
				return rd.flush()
			}
			continue
		}
		if !errors.Is(err, io.EOF) {
			return fmt.Errorf("read run log: %w", err)
		}
		if err := rd.flush(); err != nil {
			return err
		}
		if err := wait(); err != nil {
			return err
		}
	}
}

// runEndPrefix starts every run_end record ralphd writes.
const runEndPrefix = `{"type":"loop_meta","event":"run_end"`

// followRaw copies f to w as it grows, up to and including the run_end
// record.
func followRaw(f io.Reader, out io.Writer, wait func() error) error {
	w := bufio.NewWriterSize(out, 64<<10)
	flush := func() error {
		if err := w.Flush(); err != nil {
			return fmt.Errorf("write run log: %w", err)
		}
		return nil
	}
	buf := make([]byte, 64<<10)
	head := make([]byte, 0, len(runEndPrefix)) // the start of the current line
	for {
		n, err := f.Read(buf)
		data := buf[:n]
		for len(data) > 0 {
			seg := data
			i := bytes.IndexByte(data, '\n')
			if i >= 0 {
				seg = data[:i+1]
			}
			if room := cap(head) - len(head); room > 0 {
				head = append(head, seg[:min(room, len(seg))]...)
			}
			_, _ = w.Write(seg) // a write error sticks and Flush returns it
			data = data[len(seg):]
			if i >= 0 {
				if string(head) == runEndPrefix {
					return flush()
				}
				head = head[:0]
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			if err := flush(); err != nil {
				return err
			}
			if n == 0 {
				if err := wait(); err != nil {
					return err
				}
			}
		default:
			_ = flush()
			return fmt.Errorf("read run log: %w", err)
		}
	}
}

// style is how one rendered line looks in colour.
type style string

const (
	plain   style = ""
	bold    style = "\x1b[1m"
	dim     style = "\x1b[2m"
	red     style = "\x1b[31m"
	redBold style = "\x1b[1;31m"
	green   style = "\x1b[32m"
	yellow  style = "\x1b[33m"
	cyan    style = "\x1b[36m"
	reset         = "\x1b[0m"
)

// agentResult is the agent's own result line, kept until the iteration's
// end is shown.
type agentResult struct {
	turns      int64
	cost       *float64
	durationMS int64
	isError    bool
}

type renderer struct {
	w       *bufio.Writer
	opts    RenderOptions
	maxText int
	loc     *time.Location

	// agentState is the state of the agent whose line is being shown:
	// that of the worker named in the line, when several BUILD workers
	// share the run's log (states, by worker), or the run's own.
	*agentState
	states map[string]*agentState
	ended  bool  // run_end was shown
	err    error // first write error
	// agent is the backend that ran, as run_start names it.
	agent string
	// backends are the names of all backends, for a log that names none.
	backends []string
	// prefix starts every line of the record being shown: "[w2] " for a
	// line of worker w2.
	prefix string
}

// agentState is what the renderer remembers of one agent's stream.
type agentState struct {
	prefix string       // "[w2] ", or "" for the run's own agent
	result *agentResult // the agent's result not yet shown
	// parser reads this iteration's agent lines; nil until the first.
	parser agent.LogParser
	// detected is the backend whose stream a log that names none turned
	// out to be, and guesses the parsers of each backend still trying.
	detected string
	guesses  []agent.LogParser
}

// restart makes the next agent line start a new iteration's parser.
func (st *agentState) restart() {
	st.parser, st.guesses = nil, nil
}

// maxStates bounds the agents the renderer keeps apart, the run's own
// and its workers' (ralphd runs at most 64 workers); the lines of any
// further worker share one state, as a log is not trusted input.
const maxStates = 128

// use makes the renderer show the next record as worker's ("" for none).
func (rd *renderer) use(worker string) {
	st := rd.states[worker]
	if st == nil {
		if len(rd.states) >= maxStates {
			worker = "…"
			st = rd.states[worker]
		}
		if st == nil {
			st = &agentState{}
			if worker != "" {
				st.prefix = "[" + oneLine(truncate(worker, 32)) + "] "
			}
			rd.states[worker] = st
		}
	}
	rd.agentState, rd.prefix = st, st.prefix
}

// truncate cuts s to at most n bytes, on a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func newRenderer(w io.Writer, opts RenderOptions) *renderer {
	rd := &renderer{
		w:       bufio.NewWriter(w),
		opts:    opts,
		maxText: opts.MaxText,
		loc:     opts.Location,
		states:  map[string]*agentState{},
	}
	rd.use("")
	if rd.maxText <= 0 {
		rd.maxText = DefaultMaxText
	}
	if rd.loc == nil {
		rd.loc = time.Local
	}
	return rd
}

func (rd *renderer) flush() error {
	if rd.err == nil {
		if err := rd.w.Flush(); err != nil {
			rd.err = fmt.Errorf("write rendered log: %w", err)
		}
	}
	return rd.err
}

// println writes one line in style st.
func (rd *renderer) println(st style, s string) {
	if rd.err != nil {
		return
	}
	var err error
	if rd.prefix != "" && s != "" {
		s = rd.prefix + s
	}
	if rd.opts.Color && st != plain {
		_, err = rd.w.WriteString(string(st) + s + reset + "\n")
	} else {
		_, err = rd.w.WriteString(s + "\n")
	}
	if err != nil {
		rd.err = fmt.Errorf("write rendered log: %w", err)
	}
}

// block writes multi-line text, each line indented.
func (rd *renderer) block(st style, indent, text string) {
	text = strings.TrimRight(sanitize(text), "\n ")
	if text == "" {
		return
	}
	for l := range strings.SplitSeq(text, "\n") {
		if strings.TrimSpace(l) == "" {
			rd.println(plain, "")
			continue
		}
		rd.println(st, indent+l)
	}
}

// finish shows what is still pending at the end of the input.
func (rd *renderer) finish() {
	rd.showResults()
}

// showResults shows every agent's result line that no iteration_end did,
// the run's own agent's first and then the workers' in name order.
func (rd *renderer) showResults() {
	names := make([]string, 0, len(rd.states))
	for w, st := range rd.states {
		if st.result != nil {
			names = append(names, w)
		}
	}
	slices.Sort(names)
	cur, prefix := rd.agentState, rd.prefix
	for _, w := range names {
		rd.agentState, rd.prefix = rd.states[w], rd.states[w].prefix
		rd.showResult()
	}
	rd.agentState, rd.prefix = cur, prefix
}

// line renders one log line; total is its full length (line may be cut).
func (rd *renderer) line(b []byte, total int) {
	if len(bytes.TrimSpace(b)) == 0 && total == len(b) {
		return
	}
	if total > len(b) {
		rd.raw(b, total)
		return
	}
	// ralphd's own records and the lines it tagged with a worker are
	// checked and parsed here; the agent's lines only by the backend
	// that reads them.
	own := mayBeOwn(b)
	w, untagged := SplitWorker(b)
	if (own || w != "") && !text.ValidJSON(b) {
		rd.raw(b, total)
		return
	}
	var rec gjson.Result
	var typ string
	if own {
		typ = gjson.GetBytes(b, "type").String()
	}
	if typ == TypeMeta || typ == TypeAgentOutput {
		if rec = gjson.ParseBytes(b); !rec.IsObject() {
			rd.raw(b, total)
			return
		}
	}
	// Whose line it is: a worker's event names it in its data, a worker's
	// agent line in its first key (WorkerKey).
	var worker string
	if typ == TypeMeta {
		worker = rec.Get("data.worker").String()
	} else if w != "" {
		worker, b, total = w, untagged, len(untagged) // a tagged line is whole
	}
	if rd.opts.Worker != "" && worker != "" && worker != rd.opts.Worker {
		return
	}
	rd.use(worker)
	defer rd.use("")
	switch typ {
	case TypeMeta:
		rd.meta(rec)
	case TypeAgentOutput:
		rd.agentOutput(rec)
	default:
		rd.agentLine(b, total)
	}
}

// mayBeOwn reports whether the JSON object b may be one of ralphd's own
// records: it names their type, or escapes a character, which may spell
// it. Most agent lines are not, and need no look for their type here.
func mayBeOwn(b []byte) bool {
	return bytes.Contains(b, []byte(TypeMeta)) || bytes.Contains(b, []byte(TypeAgentOutput)) ||
		bytes.Contains(b, []byte(`\u`))
}

// raw shows a line Render does not understand.
func (rd *renderer) raw(b []byte, total int) {
	s := rd.cut(string(b[:min(len(b), rd.maxText+utf8.UTFMax)]), total)
	rd.println(plain, "  "+oneLine(s))
}

func (rd *renderer) meta(rec gjson.Result) {
	data := rec.Get("data")
	ts, _ := time.Parse(time.RFC3339, rec.Get("timestamp").String())
	switch event := rec.Get("event").String(); event {
	case EventWorker:
		rd.println(dim, oneLine(workerStep(data)))
	case EventRunStart:
		parts := []string{"▶ run"}
		if !ts.IsZero() {
			parts[0] += " " + ts.In(rd.loc).Format(time.DateTime)
		}
		parts = appendNonEmpty(parts, data.Get("mode").String())
		rd.agent = data.Get("agent").String()
		for _, st := range rd.states {
			st.restart()
		}
		agent := rd.agent
		if m := data.Get("model").String(); m != "" {
			agent += " (" + m + ")"
		}
		parts = appendNonEmpty(parts, agent)
		if v := data.Get("ralphd_version").String(); v != "" {
			parts = append(parts, "ralphd "+v)
		}
		if n := data.Get("max_iterations").Int(); n > 0 {
			parts = append(parts, "max "+plural(n, "iteration"))
		}
		if p := data.Get("project_id").String(); p != "" {
			parts = append(parts, "project "+p)
		}
		switch data.Get("sandbox").String() {
		case "bwrap":
			parts = append(parts, "sandboxed (bwrap)")
		case "none":
			if data.Get("mode").String() == "build" {
				parts = append(parts, "not sandboxed")
			}
		}
		rd.println(bold, oneLine(strings.Join(parts, " · ")))
		if note := data.Get("sandbox_note").String(); note != "" {
			rd.println(dim, oneLine("  "+note))
		}
	case EventIterationStart:
		rd.showResult()
		rd.restart()
		parts := []string{"━━ iteration " + data.Get("iteration").String()}
		issue := data.Get("issue_id").String()
		if issue != "" && issue != "none" {
			if title := data.Get("issue_title").String(); title != "" {
				issue += " " + strconv.Quote(title)
			}
			parts = append(parts, issue)
		} else {
			parts = appendNonEmpty(parts, data.Get("mode").String())
		}
		if a := data.Get("attempt").Int(); a > 0 {
			att := "attempt " + strconv.FormatInt(a, 10)
			if m := data.Get("max_attempts").Int(); m > 0 {
				att += "/" + strconv.FormatInt(m, 10)
			}
			parts = append(parts, att)
		}
		rd.println(plain, "")
		rd.println(bold, oneLine(strings.Join(parts, " · "))+" ━━")
	case EventIterationEnd:
		rd.iterationEnd(data)
	case EventStuck:
		s := "⚠ stuck: " + data.Get("issue_id").String()
		if a := data.Get("attempts").Int(); a > 0 {
			s += fmt.Sprintf(" after %d", a)
			if m := data.Get("max_attempts").Int(); m > 0 {
				s += fmt.Sprintf("/%d", m)
			}
			s += " attempts"
		}
		s = withDetail(s, " · ", data.Get("action").String())
		s = withDetail(s, " — ", data.Get("reason").String())
		rd.println(yellow, oneLine(s))
	case EventBDCall:
		cmd := joinArgv(data.Get("argv"))
		if a := data.Get("allowed"); a.Exists() && !a.Bool() {
			s := withDetail("  ⛔ ralphd denied: "+cmd, " — ", data.Get("reason").String())
			rd.println(redBold, oneLine(s))
		} else if rd.opts.Verbose {
			s := "  bd: " + cmd
			if c := data.Get("exit_code"); c.Exists() {
				s += " (exit " + c.String() + ")"
			}
			rd.println(dim, oneLine(s))
		}
	case EventViolation:
		s := withDetail("  ⛔ violation", ": ", data.Get("kind").String())
		s = withDetail(s, ": ", data.Get("detail").String())
		if c := data.Get("command").String(); c != "" {
			s += " [" + c + "]"
		}
		rd.println(redBold, oneLine(s))
	case EventNetworkRefused:
		rd.println(yellow, oneLine(networkRefused(data)))
	case EventQuotaWaitStart:
		s := "⏳ waiting for the quota"
		if t, err := time.Parse(time.RFC3339, data.Get("reset_at").String()); err == nil {
			s += " until " + t.In(rd.loc).Format(time.DateTime)
		}
		if sec := data.Get("wait_seconds").Int(); sec > 0 {
			s += " (" + seconds(sec) + ")"
		}
		s = withDetail(s, " — ", data.Get("reason").String())
		rd.println(yellow, oneLine(s))
	case EventQuotaWaitEnd:
		s := "⏳ quota wait over after "
		if data.Get("interrupted").Bool() {
			s = "⏳ quota wait interrupted after "
		}
		rd.println(yellow, s+seconds(data.Get("waited_seconds").Int()))
	case EventRunEnd:
		rd.showResults()
		parts := []string{"■ run end: " + data.Get("outcome").String()}
		parts = append(parts, plural(data.Get("iterations").Int(), "iteration"))
		if d := data.Get("duration_seconds"); d.Exists() {
			parts = append(parts, seconds(d.Int()))
		}
		if c := data.Get("cost_usd"); c.Type == gjson.Number {
			parts = append(parts, dollars(c.Float()))
		}
		rd.println(bold, oneLine(withDetail(strings.Join(parts, " · "), " — ", data.Get("reason").String())))
		rd.ended = true
	default:
		s := "· " + event
		if data.IsObject() && data.Raw != "{}" {
			s += " " + rd.cut(data.Raw, len(data.Raw))
		}
		rd.println(dim, oneLine(s))
	}
}

func (rd *renderer) iterationEnd(data gjson.Result) {
	res := rd.result
	rd.result = nil
	exit := data.Get("exit_code").Int()
	outcome := data.Get("outcome").String()
	st := green
	switch {
	case outcome == "" && exit == 0:
		outcome = "ok"
	case outcome == "":
		outcome = "failed"
		st = red
	case outcome == "ok":
	case outcome == "rate_limited" || outcome == "interrupted":
		st = yellow
	default:
		st = red
	}
	parts := []string{"└ iteration " + data.Get("iteration").String() + ": " + outcome}
	if exit != 0 {
		parts = append(parts, "exit "+strconv.FormatInt(exit, 10))
	}
	if d := data.Get("duration_seconds"); d.Exists() {
		parts = append(parts, seconds(d.Int()))
	} else if res != nil && res.durationMS > 0 {
		parts = append(parts, seconds((res.durationMS+500)/1000))
	}
	if t := data.Get("turns").Int(); t > 0 {
		parts = append(parts, plural(t, "turn"))
	} else if res != nil && res.turns > 0 {
		parts = append(parts, plural(res.turns, "turn"))
	}
	if c := data.Get("cost_usd"); c.Type == gjson.Number {
		parts = append(parts, dollars(c.Float()))
	} else if res != nil && res.cost != nil {
		parts = append(parts, dollars(*res.cost))
	}
	if rd.opts.Verbose {
		if tok := data.Get("tokens"); tok.IsObject() {
			parts = append(parts, fmt.Sprintf("%d in / %d out tokens",
				tok.Get("input_tokens").Int(), tok.Get("output_tokens").Int()))
		}
	}
	if data.Get("issue_closed").Bool() {
		parts = append(parts, "issue closed")
	}
	rd.println(st, oneLine(withDetail(strings.Join(parts, " · "), " — ", data.Get("reason").String())))
}

// showResult shows the agent's result line when no iteration_end did.
func (rd *renderer) showResult() {
	res := rd.result
	if res == nil {
		return
	}
	rd.result = nil
	st, parts := green, []string{"└ agent result: ok"}
	if res.isError {
		st, parts[0] = red, "└ agent result: error"
	}
	if res.durationMS > 0 {
		parts = append(parts, seconds((res.durationMS+500)/1000))
	}
	if res.turns > 0 {
		parts = append(parts, plural(res.turns, "turn"))
	}
	if res.cost != nil {
		parts = append(parts, dollars(*res.cost))
	}
	rd.println(st, strings.Join(parts, " · "))
}

func (rd *renderer) agentOutput(rec gjson.Result) {
	stream := rec.Get("stream").String()
	line := rec.Get("line").String()
	if stream == StreamStdout && !rec.Get("chunk").Exists() {
		// A whole stdout line that is not a JSON object: the stream of a
		// backend whose CLI does not write JSON, or noise.
		b := []byte(line)
		if evs, ok := rd.parse(b); ok {
			for _, ev := range evs {
				rd.event(ev, b, len(b))
			}
			return
		}
	}
	var tags []string
	if stream != StreamStdout {
		tags = append(tags, stream)
	}
	if c := rec.Get("chunk").Int(); c > 0 {
		tags = append(tags, "[chunk "+strconv.FormatInt(c, 10)+"]")
	}
	label := "  "
	if len(tags) > 0 {
		label += strings.Join(tags, " ") + ": "
	}
	st := plain
	if stream != StreamStdout {
		st = dim
	}
	rd.println(st, oneLine(label+rd.cut(line, len(line))))
}

// cut shortens s to the renderer's MaxText bytes, on a character boundary,
// noting how much was left out of a line of total bytes.
func (rd *renderer) cut(s string, total int) string {
	if len(s) <= rd.maxText && total <= len(s) {
		return s
	}
	n := min(rd.maxText, len(s))
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("… (%d bytes)", max(total, len(s)))
}

// sanitize makes s safe to print on a terminal: invalid UTF-8, control
// characters (escape sequences included) except newline and tab, and
// bidirectional overrides become U+FFFD.
func sanitize(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if unsafeRune(r) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return (unicode.IsControl(r) && r != '\n' && r != '\t') || unicode.Is(unicode.Bidi_Control, r)
}

// oneLine sanitizes s and puts it on one line.
func oneLine(s string) string {
	s = sanitize(s)
	if strings.ContainsAny(s, "\n\t") {
		s = strings.NewReplacer("\n", " ⏎ ", "\t", " ").Replace(strings.TrimRight(s, "\n"))
	}
	return s
}

func appendNonEmpty(parts []string, s string) []string {
	if s == "" {
		return parts
	}
	return append(parts, s)
}

// workerStep renders one step of a worker for a person: "· claimed t-1",
// "· integrated t-1 onto the target at 1a2b3c4d5e6f". A step this
// renderer does not know shows its kind, issue and detail as they are.
func workerStep(data gjson.Result) string {
	kind, issue, detail := data.Get("kind").String(), data.Get("issue_id").String(), data.Get("detail").String()
	switch kind {
	case "integrated":
		if len(detail) == 40 && strings.Trim(detail, "0123456789abcdef") == "" {
			detail = detail[:12]
		}
		return withDetail("· integrated "+issue, " onto the target at ", detail)
	case "idle-exit":
		return "· nothing left to claim: done"
	}
	return withDetail(withDetail("· "+kind, " ", issue), " — ", detail)
}

// networkRefused renders a network_refused event for a person: the host
// the sandbox's proxy refused, and the setting that would allow it.
func networkRefused(data gjson.Result) string {
	return "  🚫 network: refused " + data.Get("host").String() + " (not on the sandbox's allowlist: the agent's model API hosts and network_allow)"
}

func withDetail(s, sep, detail string) string {
	if detail == "" {
		return s
	}
	return s + sep + detail
}

// joinArgv renders an argv array as a command line, quoting arguments that
// need it.
func joinArgv(argv gjson.Result) string {
	var parts []string
	for _, a := range argv.Array() {
		s := a.String()
		if s == "" || strings.ContainsAny(s, " \t\n\"'\\$`;&|<>*?()") {
			s = strconv.Quote(s)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// seconds formats a duration given in seconds, e.g. 2m5s.
func seconds(sec int64) string {
	if sec < 0 || sec > 1<<32 {
		return strconv.FormatInt(sec, 10) + "s"
	}
	return (time.Duration(sec) * time.Second).String()
}

func dollars(usd float64) string {
	if usd >= 1 || usd == 0 {
		return fmt.Sprintf("$%.2f", usd)
	}
	return fmt.Sprintf("$%.4f", usd)
}

func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.FormatInt(n, 10) + " " + word + "s"
}
