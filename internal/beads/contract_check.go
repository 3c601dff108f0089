package beads

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ralphd/ralphd/internal/proc"
)

// Verdict is how one contract case came out.
type Verdict string

// The verdicts, as `ralphd doctor --bd` prints them.
const (
	Passed    Verdict = "ok"
	Differs   Verdict = "FAIL" // bd differs in something ralphd relies on
	Tolerated Verdict = "warn" // bd differs, and ralphd copes
)

// CaseResult is the outcome of one contract case.
type CaseResult struct {
	Name    string
	Verdict Verdict
	// Diffs say exactly what differed, one difference each.
	Diffs []string
	// Tolerated says how ralphd copes, for a Tolerated verdict.
	Tolerated string
}

// ContractReport is the outcome of one CheckContract run.
type ContractReport struct {
	Bin     string
	Version Version // zero when bd did not say
	Results []CaseResult
}

// Failed returns the cases whose verdict is Differs.
func (r ContractReport) Failed() []CaseResult {
	var out []CaseResult
	for _, c := range r.Results {
		if c.Verdict == Differs {
			out = append(out, c)
		}
	}
	return out
}

// ContractOptions say which bd to check and how.
type ContractOptions struct {
	// Bin is the bd binary: a name looked up in PATH or a path; "" is bd.
	Bin string
	// Env holds extra "KEY=value" entries for every bd run, after the
	// check's own (tests set the stand-in's knobs here).
	Env []string
	// TempDir is where the scratch directory is made; "" means
	// os.TempDir.
	TempDir string
	// Timeout limits each bd call; zero means DefaultTimeout.
	Timeout time.Duration
	// Progress, when set, is told each case's result as it comes.
	Progress func(CaseResult)
}

// The actors the contract's claims run as, and the git identity of its
// scratch repository.
const (
	contractActor1 = "ralphd-contract-1"
	contractActor2 = "ralphd-contract-2"
	contractUser   = "ralphd contract"
	contractEmail  = "contract@ralphd.invalid"
)

// CheckContract runs the contract (ContractCases) against a bd binary in a
// scratch git repository it creates and removes, with a scratch HOME and
// no BEADS_* or BD_* settings of the user's, and reports each case. It
// fails only when the check itself cannot run (no bd, no git, no scratch
// directory); what bd does wrong is in the report.
func CheckContract(ctx context.Context, o ContractOptions) (ContractReport, error) {
	bin, err := LookPath(o.Bin)
	if err != nil {
		return ContractReport{}, err
	}
	scratch, err := os.MkdirTemp(o.TempDir, "ralphd-bd-contract-")
	if err != nil {
		return ContractReport{}, fmt.Errorf("bd contract: scratch directory: %w", err)
	}
	scratch, err = filepath.EvalSymlinks(scratch)
	if err != nil {
		return ContractReport{}, fmt.Errorf("bd contract: scratch directory: %w", err)
	}
	ch := &contractRun{
		bin: bin, scratch: scratch, timeout: o.Timeout,
		repo: filepath.Join(scratch, "repo"), uninit: filepath.Join(scratch, "uninit"),
		vars: map[string]string{actor1: contractActor1, actor2: contractActor2, "missing": "rc-zzz"},
	}
	if ch.timeout <= 0 {
		ch.timeout = DefaultTimeout
	}
	ch.env = contractEnv(os.Environ(), scratch, o.Env)
	defer ch.cleanUp()
	if err := ch.prepare(ctx); err != nil {
		return ContractReport{}, err
	}

	rep := ContractReport{Bin: bin}
	rep.Version, _ = ReadVersion(ctx, bin)
	gateFailed := ""
	for _, c := range ContractCases() {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		var res CaseResult
		if gateFailed != "" {
			res = CaseResult{Name: c.Name, Verdict: Differs, Diffs: []string{"not run: " + gateFailed + " failed"}}
		} else {
			res = ch.runCase(ctx, c)
		}
		if c.Gate && res.Verdict == Differs && gateFailed == "" {
			gateFailed = c.Name
		}
		rep.Results = append(rep.Results, res)
		if o.Progress != nil {
			o.Progress(res)
		}
	}
	return rep, nil
}

// contractRun is one run of the contract: its scratch directories and
// what its steps bound.
type contractRun struct {
	bin, scratch, repo, uninit string
	env                        []string
	timeout                    time.Duration
	vars                       map[string]string
}

// contractEnv is the environment of the contract's processes: the user's,
// without anything that points bd or git elsewhere, with a scratch HOME
// and XDG dirs, bd made non-interactive, and extra last.
func contractEnv(base []string, scratch string, extra []string) []string {
	home := filepath.Join(scratch, "home")
	var env []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "BEADS_"), strings.HasPrefix(k, "BD_"), strings.HasPrefix(k, "GIT_"),
			strings.HasPrefix(k, "XDG_"), k == "HOME":
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"GIT_CONFIG_GLOBAL="+filepath.Join(home, ".gitconfig"),
		"GIT_CONFIG_NOSYSTEM=1",
		"BD_NON_INTERACTIVE=1",
	)
	return append(env, extra...)
}

// prepare makes the scratch HOME and two git repositories: one for the
// tracker, one left without.
func (ch *contractRun) prepare(ctx context.Context) error {
	home := filepath.Join(ch.scratch, "home")
	for _, d := range []string{home, ch.repo, ch.uninit} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("bd contract: %w", err)
		}
	}
	gitconfig := "[user]\n\tname = " + contractUser + "\n\temail = " + contractEmail + "\n[init]\n\tdefaultBranch = main\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o600); err != nil {
		return fmt.Errorf("bd contract: %w", err)
	}
	for _, d := range []string{ch.repo, ch.uninit} {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		cmd := proc.Command(cctx, 0, "git", "init", "-q", d)
		cmd.Env = ch.env
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Errorf("bd contract: git init: %w: %s", err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// cleanUp removes the scratch directory. A tracker bd keeps on a server of
// its own (a server-mode layout) gets `bd dolt stop` first, so that no
// server outlives the check; from bd's changelog, not verified against
// that version.
func (ch *contractRun) cleanUp() {
	if ServerMode(filepath.Join(ch.repo, ".beads"), nil) {
		ctx, cancel := context.WithTimeout(context.Background(), ch.timeout)
		_, _ = runRaw(ctx, runSpec{bin: ch.bin, dir: ch.repo, env: ch.env, args: []string{"dolt", "stop"}, timeout: ch.timeout})
		cancel()
	}
	_ = os.RemoveAll(ch.scratch)
}

// argv expands a step's arguments, with --actor first when it has one.
func (ch *contractRun) argv(s ContractStep) ([]string, error) {
	var out []string
	if s.Actor != "" {
		out = append(out, "--actor", ch.vars[s.Actor])
	}
	for _, a := range s.Args {
		x, err := expand(a, ch.vars)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// step runs one step and returns its argv and result.
func (ch *contractRun) step(ctx context.Context, s ContractStep) ([]string, runResult, error) {
	argv, err := ch.argv(s)
	if err != nil {
		return nil, runResult{}, err
	}
	dir := ch.repo
	if s.Where == Uninitialized {
		dir = ch.uninit
	}
	r, err := runRaw(ctx, runSpec{bin: ch.bin, dir: dir, env: ch.env, args: argv, timeout: ch.timeout})
	if err != nil {
		return argv, r, err
	}
	if s.Bind != "" && r.code == 0 {
		is, perr := ParseIssue(r.stdout)
		if perr == nil {
			ch.vars[s.Bind] = is.ID
			return argv, r, nil
		}
		// Bind what bd printed all the same, so that the cases after this
		// one check their own calls, not this parse.
		root := gjson.ParseBytes(r.stdout)
		if root.IsArray() {
			root = root.Get("0")
		}
		if id := root.Get("id"); id.Type == gjson.String {
			ch.vars[s.Bind] = id.Str
		}
		return argv, r, &bindError{fmt.Errorf("%s: %w", commandLine(argv), perr)}
	}
	return argv, r, nil
}

// bindError is a step's output ralphd could not parse for its Bind. A
// case's own call reports it through its Shape instead.
type bindError struct{ error }

func (e *bindError) Unwrap() error { return e.error }

// runCase runs a case's setup and its call, and judges the result.
func (ch *contractRun) runCase(ctx context.Context, c ContractCase) CaseResult {
	res := CaseResult{Name: c.Name, Verdict: Passed}
	fail := func(diffs ...string) CaseResult {
		res.Diffs = diffs
		res.Verdict = Differs
		if c.Tolerated != "" {
			res.Verdict, res.Tolerated = Tolerated, c.Tolerated
		}
		return res
	}
	for _, s := range c.Setup {
		argv, r, err := ch.step(ctx, s)
		switch {
		case err != nil:
			return fail(fmt.Sprintf("setup: %v", err))
		case r.code != 0:
			return fail(fmt.Sprintf("setup: %s exited %d: %s", commandLine(argv), r.code, stderrSummary(string(r.stderr))))
		}
	}
	if len(c.Racers) > 0 {
		if diffs := ch.race(ctx, c.Racers); len(diffs) > 0 {
			return fail(diffs...)
		}
		return res
	}
	argv, r, err := ch.step(ctx, c.Run)
	var be *bindError
	if err != nil && !errors.As(err, &be) {
		return fail(err.Error())
	}
	if diffs := c.Judge(ch.dir(c.Run), argv, r.stdout, r.stderr, r.code, ch.vars); len(diffs) > 0 {
		return fail(diffs...)
	}
	return res
}

func (ch *contractRun) dir(s ContractStep) string {
	if s.Where == Uninitialized {
		return ch.uninit
	}
	return ch.repo
}

// race runs claims at once and checks that exactly one won and every
// other lost cleanly.
func (ch *contractRun) race(ctx context.Context, racers []ContractStep) []string {
	type outcome struct {
		argv []string
		r    runResult
		err  error
	}
	outs := make([]outcome, len(racers))
	var wg sync.WaitGroup
	for i, s := range racers {
		wg.Go(func() {
			argv, r, err := ch.step(ctx, s)
			outs[i] = outcome{argv, r, err}
		})
	}
	wg.Wait()
	var diffs []string
	winners := 0
	for i, o := range outs {
		who := ch.vars[racers[i].Actor]
		switch {
		case o.err != nil:
			diffs = append(diffs, o.err.Error())
		case o.r.code == 0:
			winners++
			diffs = append(diffs, judge(Expect{Shape: IssuesShape, Fields: map[string]string{
				"status": StatusInProgress, "assignee": who,
			}}, ch.repo, o.argv, o.r, ch.vars)...)
		default:
			err := exitError(ch.repo, o.argv, o.r.code, o.r.stdout, o.r.stderr)
			if _, ok := RefusalOf(err); !ok {
				diffs = append(diffs, fmt.Sprintf("%s lost without a claim refusal ralphd reads: %v", who, err))
			}
		}
	}
	if winners != 1 {
		diffs = append(diffs, fmt.Sprintf("%d claims won, want exactly 1", winners))
	}
	return diffs
}

// judge lists how a bd run (argv in dir, result r) differs from want.
func judge(want Expect, dir string, argv []string, r runResult, vars map[string]string) []string {
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	switch {
	case want.Fails && r.code == 0:
		add("exit 0, want a failure (non-zero)")
	case !want.Fails && r.code != 0:
		if s := stderrSummary(string(r.stderr)); s != "" {
			add("exit %d, want 0: %s", r.code, s)
		} else {
			add("exit %d, want 0", r.code)
		}
		return diffs
	}
	for _, p := range []struct {
		stream, pattern string
		out             []byte
	}{{"stdout", want.Stdout, r.stdout}, {"stderr", want.Stderr, r.stderr}} {
		if p.pattern == "" {
			continue
		}
		re, err := regexp.Compile(expandQuoted(p.pattern, vars))
		if err != nil {
			add("the contract's %s pattern %q: %v", p.stream, p.pattern, err)
			continue
		}
		if !re.Match(p.out) {
			add("%s does not match %s: %q", p.stream, re, truncate(string(p.out), 200))
		}
	}
	if want.Fails {
		if r.code != 0 {
			diffs = append(diffs, judgeFailure(want, exitError(dir, argv, r.code, r.stdout, r.stderr), vars)...)
		}
		return diffs
	}
	return append(diffs, judgeOutput(want, r.stdout, vars)...)
}

// judgeFailure checks that ralphd reads a failure as want says.
func judgeFailure(want Expect, err error, vars map[string]string) []string {
	var diffs []string
	if want.NotFound && !errors.Is(err, ErrIssueNotFound) {
		diffs = append(diffs, fmt.Sprintf("ralphd does not read this as an unknown id: %v", err))
	}
	if want.NotInitialized && !errors.Is(err, ErrNotInitialized) {
		diffs = append(diffs, fmt.Sprintf("ralphd does not read this as no tracker: %v", err))
	}
	if want.Refusal != RefusedNone {
		r, ok := RefusalOf(err)
		switch {
		case ok && want.Refusal == AlreadyClaimed && r.Kind == Stale:
			// A lost race either way, holder unknown (from bd's changelog,
			// not verified against that version).
		case !ok || r.Kind != want.Refusal:
			diffs = append(diffs, fmt.Sprintf("ralphd does not read this as a claim refusal (%s): %v", refusalName(want.Refusal), err))
		case want.Holder != "" && r.Holder != expandOr(want.Holder, vars):
			diffs = append(diffs, fmt.Sprintf("claim refused for holder %q, want %q", r.Holder, expandOr(want.Holder, vars)))
		}
	}
	return diffs
}

func refusalName(k RefusalKind) string {
	return [...]string{"none", "already claimed", "not claimable", "serialization failure", "stale"}[k]
}

// judgeOutput parses stdout with ralphd's parser for want.Shape and checks
// what it read.
func judgeOutput(want Expect, stdout []byte, vars map[string]string) []string {
	var issues []Issue
	switch want.Shape {
	case NoShape:
		return nil
	case IssuesShape:
		is, err := ParseIssues(stdout)
		if err != nil {
			return []string{fmt.Sprintf("ralphd cannot parse stdout as %s: %v", want.Shape, err)}
		}
		issues = is
	case IssueShape:
		is, err := ParseIssue(stdout)
		if err != nil {
			return []string{fmt.Sprintf("ralphd cannot parse stdout as %s: %v", want.Shape, err)}
		}
		issues = []Issue{is}
	case ExportShape:
		is, err := ParseExport(stdout)
		if err != nil {
			return []string{fmt.Sprintf("ralphd cannot parse stdout as %s: %v", want.Shape, err)}
		}
		issues = is
		if want.HasComment != "" && !slices.ContainsFunc(issues, func(is Issue) bool {
			return slices.ContainsFunc(is.Comments, func(c Comment) bool { return c.Text == want.HasComment })
		}) {
			return []string{fmt.Sprintf("no issue of the export has the comment %q", want.HasComment)}
		}
	case CommentsShape:
		cs, err := ParseComments(stdout)
		if err != nil {
			return []string{fmt.Sprintf("ralphd cannot parse stdout as %s: %v", want.Shape, err)}
		}
		if want.HasComment == "" || slices.ContainsFunc(cs, func(c Comment) bool { return c.Text == want.HasComment }) {
			return nil
		}
		texts := make([]string, len(cs))
		for i, c := range cs {
			texts[i] = strconv.Quote(c.Text)
		}
		return []string{fmt.Sprintf("comments [%s] lack %q", strings.Join(texts, " "), want.HasComment)}
	case StatsShape:
		if _, err := ParseStats(stdout); err != nil {
			return []string{fmt.Sprintf("ralphd cannot parse stdout as %s: %v", want.Shape, err)}
		}
		return nil
	case VersionShape:
		if _, err := ParseVersion(stdout); err != nil {
			return []string{fmt.Sprintf("ralphd cannot parse stdout as %s: %v", want.Shape, err)}
		}
		return nil
	}
	return judgeIssues(want, issues, vars)
}

// judgeIssues checks the ids and fields of the issues a call printed.
func judgeIssues(want Expect, issues []Issue, vars map[string]string) []string {
	var diffs []string
	ids := make([]string, len(issues))
	for i, is := range issues {
		ids[i] = is.ID
	}
	expandAll := func(xs []string) []string {
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = expandOr(x, vars)
		}
		return out
	}
	if want.IDs != nil {
		if w := expandAll(want.IDs); !slices.Equal(ids, w) {
			diffs = append(diffs, fmt.Sprintf("issues %v, want %v", ids, w))
		}
	}
	for _, id := range expandAll(want.Has) {
		if !slices.Contains(ids, id) {
			diffs = append(diffs, fmt.Sprintf("issues %v lack %s", ids, id))
		}
	}
	for _, id := range expandAll(want.Lacks) {
		if slices.Contains(ids, id) {
			diffs = append(diffs, fmt.Sprintf("issues %v include %s, want it left out", ids, id))
		}
	}
	if len(want.Fields) == 0 {
		return diffs
	}
	var of *Issue
	switch {
	case want.Of != "":
		id := expandOr(want.Of, vars)
		for i := range issues {
			if issues[i].ID == id {
				of = &issues[i]
			}
		}
		if of == nil {
			return append(diffs, fmt.Sprintf("issues %v lack %s", ids, id))
		}
	case len(issues) == 1:
		of = &issues[0]
	default:
		return append(diffs, fmt.Sprintf("%d issues printed, want one", len(issues)))
	}
	keys := make([]string, 0, len(want.Fields))
	for k := range want.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		w := expandOr(want.Fields[k], vars)
		got, ok := IssueField(*of, k)
		suffix, isSuffix := strings.CutPrefix(w, "<suffix>")
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("the contract names an unknown field %q", k))
		case w == "<set>":
			if got == "" {
				diffs = append(diffs, fmt.Sprintf("%s: empty, want a value", k))
			}
		case isSuffix:
			if !strings.HasSuffix(got, suffix) {
				diffs = append(diffs, fmt.Sprintf("%s: %q, want it to end in %q", k, got, suffix))
			}
		case got != w:
			diffs = append(diffs, fmt.Sprintf("%s: %q, want %q", k, got, w))
		}
	}
	return diffs
}

// IssueField returns the value ralphd read for one of bd's JSON field
// names, as text: numbers in decimal, times in RFC 3339 ("" when unset),
// labels sorted and joined by ",", dependencies as sorted "type:id", and
// the fields Issue has no Go field for as Issue.Extra keeps them.
func IssueField(is Issue, name string) (string, bool) {
	when := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	switch name {
	case "id":
		return is.ID, true
	case "title":
		return is.Title, true
	case "description":
		return is.Description, true
	case "design":
		return is.Design, true
	case "acceptance_criteria":
		return is.AcceptanceCriteria, true
	case "notes":
		return is.Notes, true
	case "status":
		return is.Status, true
	case "priority":
		return strconv.Itoa(is.Priority), true
	case "issue_type":
		return is.IssueType, true
	case "assignee":
		return is.Assignee, true
	case "close_reason":
		return is.CloseReason, true
	case "parent":
		return is.Parent, true
	case "external_ref":
		return is.ExternalRef, true
	case "estimated_minutes":
		return strconv.Itoa(is.EstimatedMinutes), true
	case "labels":
		l := slices.Clone(is.Labels)
		slices.Sort(l)
		return strings.Join(l, ","), true
	case "dependencies":
		var ds []string
		for _, d := range is.Dependencies {
			ds = append(ds, d.Type+":"+d.DependsOnID)
		}
		slices.Sort(ds)
		return strings.Join(ds, ","), true
	case "started_at":
		return when(is.StartedAt), true
	case "closed_at":
		return when(is.ClosedAt), true
	case "defer_until":
		return when(is.DeferUntil), true
	case "due_at":
		return when(is.DueAt), true
	case "spec_id":
		return is.Extra[name], true
	}
	return "", false
}

var varRE = regexp.MustCompile(`\{([A-Za-z0-9]+)\}`)

// expand replaces each "{name}" in s by vars[name]; an unbound name is an
// error (the step that binds it failed).
func expand(s string, vars map[string]string) (string, error) {
	var missing string
	out := varRE.ReplaceAllStringFunc(s, func(m string) string {
		name := m[1 : len(m)-1]
		v, ok := vars[name]
		if !ok {
			missing = name
		}
		return v
	})
	if missing != "" {
		return "", fmt.Errorf("{%s} is unbound: the step that creates it failed", missing)
	}
	return out, nil
}

// expandOr is expand, leaving an unbound "{name}" as it is.
func expandOr(s string, vars map[string]string) string {
	return varRE.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := vars[m[1:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// expandQuoted is expandOr for a regular expression: the values are
// quoted.
func expandQuoted(s string, vars map[string]string) string {
	return varRE.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := vars[m[1:len(m)-1]]; ok {
			return regexp.QuoteMeta(v)
		}
		return m
	})
}

// Judge lists how one bd run (its argv, output and exit code) differs
// from the case's expectation; vars name the run's scratch paths and ids
// as the expectation writes them. The check of a user's bd and the test
// kit's check of the recorded runs both judge through it.
// dir is where the case ran ("" for a recording, whose paths vars name).
func (c ContractCase) Judge(dir string, argv []string, stdout, stderr []byte, code int, vars map[string]string) []string {
	return judge(c.Want, dir, argv, runResult{stdout: stdout, stderr: stderr, code: code}, vars)
}
