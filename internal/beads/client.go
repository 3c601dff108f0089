package beads

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ralphd/ralphd/internal/proc"
)

// DefaultTimeout is the per-call timeout a Client uses when its Timeout is
// zero. Real bd answers in well under a second; the margin covers waiting
// on the .beads lock while other bd processes (agents) write.
const DefaultTimeout = 30 * time.Second

// waitDelay bounds how long a call waits for bd's output pipes after its
// process group was killed.
const waitDelay = 2 * time.Second

// Client runs the user's bd binary, one process per call. Every call
// passes --json, runs under its own timeout in its own process group
// (killed as a whole on timeout or cancellation), and fails on a non-zero
// exit code. The zero value runs "bd" from PATH in the current directory;
// a Client must not be copied after first use.
type Client struct {
	// Bin is the bd binary: a path, or a name looked up in PATH on every
	// call. NewClient resolves it to an absolute path once.
	Bin string
	// Dir is the directory bd runs in; bd finds .beads/ from there. Empty
	// means the current directory.
	Dir string
	// Env holds extra "KEY=value" entries added to the inherited
	// environment, for example "BEADS_DIR=..." or "BD_JSON_ENVELOPE=1".
	Env []string
	// Timeout limits each call; zero means DefaultTimeout.
	Timeout time.Duration
	// Actor, when set, is passed as --actor, the name bd records in its
	// audit trail and as the assignee of claims.
	Actor string
	// Redact, when set, is applied to the text of every note ralphd
	// appends, so that a secret in a command's output never reaches the
	// tracker.
	Redact func(string) string
	// OnCall, when set, is told about every bd process this Client ran:
	// its arguments, how long it took and its error (metrics use it). It
	// must not block.
	OnCall func(args []string, took time.Duration, err error)
	// OnWrite, when set, is told every bd call of this Client's that
	// changes an issue it can name (a *Write: its arguments, actor, and
	// through Effects what it changes), before the call starts and again,
	// the same *Write, after it ended, whatever its result: a tracker
	// reader that re-reads what ralphd wrote (some writes, such as labels,
	// move no updated_at) sees the write however its read interleaves
	// with it, and can tell what the write explains from what it does
	// not. `bd ready --claim`, whose argv names no issue, is told after
	// it claimed one, as the claim of that issue. It must not block.
	OnWrite func(w *Write)

	calls  atomic.Int64
	maxOut int // stdout limit; zero means maxStdout (tests lower it)
}

// NewClient returns a Client for the bd binary bin (a name looked up in
// PATH, or a path; "" means "bd"), resolved to an absolute path once,
// running in dir. It returns a *NotInstalledError when bd is missing.
func NewClient(bin, dir string) (*Client, error) {
	path, err := LookPath(bin)
	if err != nil {
		return nil, err
	}
	return &Client{Bin: path, Dir: dir, Timeout: DefaultTimeout}, nil
}

// LookPath resolves bin (a name looked up in PATH, or a path; "" means
// "bd") to an absolute path. It returns a *NotInstalledError, which names
// the install routes, when there is no such executable.
func LookPath(bin string) (string, error) {
	if bin == "" {
		bin = "bd"
	}
	p, err := exec.LookPath(bin)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return "", &NotInstalledError{Bin: bin, Err: err}
		}
		return "", fmt.Errorf("look up %s: %w", bin, err)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("look up %s: %w", bin, err)
	}
	return abs, nil
}

// Calls returns how many bd processes this Client has started.
func (c *Client) Calls() int64 { return c.calls.Load() }

// ReadyOptions selects the work bd ready returns.
type ReadyOptions struct {
	// Parent scopes the result to the descendants of this issue (an epic).
	Parent string
	// Limit caps the number of issues; zero means all of them (--limit 0),
	// not bd's default of 100.
	Limit int
}

// Ready returns the issues ready to work on, in bd's order (priority, then
// newest first).
func (c *Client) Ready(ctx context.Context, opts ReadyOptions) ([]Issue, error) {
	if opts.Limit < 0 {
		return nil, fmt.Errorf("bd ready: negative limit %d", opts.Limit)
	}
	if opts.Parent != "" {
		if err := checkID(opts.Parent); err != nil {
			return nil, fmt.Errorf("bd ready: %w", err)
		}
	}
	return c.issues(ctx, readyArgs(opts))
}

// readyArgs is the argv of Ready (without --json).
func readyArgs(opts ReadyOptions) []string {
	args := []string{"ready", "--limit", strconv.Itoa(opts.Limit)}
	return appendFlag(args, "--parent", opts.Parent)
}

// Show returns one issue with its dependencies as edges whose
// DependsOnStatus is set.
func (c *Client) Show(ctx context.Context, id string) (Issue, error) {
	issues, err := c.ShowMany(ctx, id)
	if err != nil {
		return Issue{}, err
	}
	if len(issues) != 1 {
		return Issue{}, fmt.Errorf("bd show %s: want one issue, got %d", id, len(issues))
	}
	return issues[0], nil
}

// ShowMany returns the issues with the given ids in one bd call. It fails
// when any id is unknown. No ids means no call and no issues.
func (c *Client) ShowMany(ctx context.Context, ids ...string) ([]Issue, error) {
	return c.showIDs(ctx, []string{"show"}, ids)
}

// showIDs runs show (with flags) on ids, checked first; no ids means no
// call and no issues.
func (c *Client) showIDs(ctx context.Context, show, ids []string) ([]Issue, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	for _, id := range ids {
		if err := checkID(id); err != nil {
			return nil, fmt.Errorf("bd show: %w", err)
		}
	}
	return c.issues(ctx, append(show, ids...))
}

// Export returns every issue of the tracker with its labels,
// dependencies and comments, in one call (`bd export`, which prints JSON
// lines): what a first tracker snapshot uses to read the comments of many
// issues at once, where `bd show --include-comments` costs real bd about
// 75 ms an issue.
func (c *Client) Export(ctx context.Context) ([]Issue, error) {
	out, err := c.RunJSON(ctx, exportArgs()...)
	if err != nil {
		return nil, err
	}
	issues, err := ParseExport(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", commandLine(jsonArgs(exportArgs())), err)
	}
	return issues, nil
}

func exportArgs() []string { return []string{"export"} }

// ListAllWithComments returns what `bd list --all --json` lists, each
// issue with its comments, from one `bd export`: the same issues with the
// same fields (bd 1.0.5: both list every status, leave out templates,
// infrastructure types and ephemeral issues, and derive a child's parent
// from its parent-child edge), and the comments `bd list` leaves out.
// bd's list also leaves out gates (type gate), which its export keeps:
// they are dropped here. Real bd 1.0.5 takes about as long to export 50
// issues as to list them, and about 2.4 times as long at 5,000, which is
// still less than a list and a separate reading of the comments.
func (c *Client) ListAllWithComments(ctx context.Context) ([]Issue, error) {
	issues, err := c.Export(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(issues, func(is Issue) bool { return is.IssueType == typeGate }), nil
}

// typeGate is the issue type of bd's gates, which `bd list` leaves out
// unless asked.
const typeGate = "gate"

// ShowWithComments returns the issues with the given ids, each with its
// comments, in one call (`bd show --json --include-comments ID...`): what a
// tracker snapshot uses in place of one `bd comments` call per issue. It
// fails when any id is unknown. No ids means no call and no issues.
func (c *Client) ShowWithComments(ctx context.Context, ids ...string) ([]Issue, error) {
	return c.showIDs(ctx, []string{"show", "--include-comments"}, ids)
}

// ListOptions selects the issues bd list returns.
type ListOptions struct {
	// Status filters by stored status; bd accepts a comma-separated list.
	// Empty means bd's default: every status but closed.
	Status string
	// All includes closed issues.
	All bool
	// UpdatedAfter, when set, keeps only the issues whose updated_at is
	// after it (--updated-after, RFC 3339 in UTC; bd compares at its
	// second precision).
	UpdatedAfter time.Time
	// IDs, when set, keeps only these issues (--id A,B). bd ignores an id
	// it does not know, and a filter with none it knows may list every
	// issue: callers keep only the ids they asked for.
	IDs []string
}

// List returns issues, all of them (--limit 0), in bd's order.
func (c *Client) List(ctx context.Context, opts ListOptions) ([]Issue, error) {
	for _, id := range opts.IDs {
		if err := checkID(id); err != nil {
			return nil, fmt.Errorf("bd list: %w", err)
		}
		if strings.Contains(id, ",") {
			return nil, fmt.Errorf("bd list: id %q holds a comma, which --id reads as a separator", id)
		}
	}
	return c.issues(ctx, listArgs(opts))
}

// listArgs is the argv of List (without --json).
func listArgs(opts ListOptions) []string {
	args := []string{"list", "--limit", "0"}
	args = appendFlag(args, "--status", opts.Status)
	if opts.All {
		args = append(args, "--all")
	}
	if !opts.UpdatedAfter.IsZero() {
		args = append(args, "--updated-after", opts.UpdatedAfter.UTC().Format(time.RFC3339))
	}
	if len(opts.IDs) > 0 {
		args = append(args, "--id", strings.Join(opts.IDs, ","))
	}
	return args
}

// Blocked returns the open issues that have open blockers, with BlockedBy
// set.
func (c *Client) Blocked(ctx context.Context) ([]Issue, error) {
	return c.issues(ctx, []string{"blocked"})
}

// Stats returns the counts bd stats prints.
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	args := []string{"stats"}
	out, err := c.RunJSON(ctx, args...)
	if err != nil {
		return Stats{}, err
	}
	s, err := ParseStats(out)
	if err != nil {
		return Stats{}, fmt.Errorf("%s: %w", commandLine(jsonArgs(args)), err)
	}
	return s, nil
}

// CreateOptions describes a new issue. Empty fields are left to bd's
// defaults (type task, priority 2).
type CreateOptions struct {
	Title       string
	Description string
	Type        string
	Priority    *int
	Acceptance  string
	Design      string
	Notes       string
	Labels      []string
	// Parent makes the issue a child of this one (id "<parent>.N").
	Parent string
	// ID sets the issue id explicitly instead of a generated one.
	ID string
	// Deps are ids this issue depends on, as "id" (blocks) or "type:id".
	Deps []string
	// Defer creates the issue deferred until then ("+2d"): bd gives it the
	// status deferred, so it is never ready and never claimable.
	Defer string
}

// Create creates an issue and returns it as bd printed it.
func (c *Client) Create(ctx context.Context, o CreateOptions) (Issue, error) {
	if strings.TrimSpace(o.Title) == "" {
		return Issue{}, errors.New("bd create: empty title")
	}
	args := createArgs(o)
	out, err := c.RunJSON(ctx, args...)
	if err != nil {
		return Issue{}, err
	}
	is, err := ParseIssue(out)
	if err != nil {
		return Issue{}, fmt.Errorf("%s: %w", commandLine(jsonArgs(args)), err)
	}
	return is, nil
}

// createArgs is the argv of Create (without --json).
func createArgs(o CreateOptions) []string {
	args := []string{"create"}
	if strings.HasPrefix(o.Title, "-") {
		args = append(args, "--title", o.Title)
	} else {
		args = append(args, o.Title)
	}
	args = appendFlag(args, "--description", o.Description)
	args = appendFlag(args, "--type", o.Type)
	if o.Priority != nil {
		args = append(args, "--priority", strconv.Itoa(*o.Priority))
	}
	args = appendFlag(args, "--acceptance", o.Acceptance)
	args = appendFlag(args, "--design", o.Design)
	args = appendFlag(args, "--notes", o.Notes)
	if len(o.Labels) > 0 {
		args = append(args, "--labels", strings.Join(o.Labels, ","))
	}
	args = appendFlag(args, "--parent", o.Parent)
	args = appendFlag(args, "--id", o.ID)
	if len(o.Deps) > 0 {
		args = append(args, "--deps", strings.Join(o.Deps, ","))
	}
	args = appendFlag(args, "--defer", o.Defer)
	return args
}

// UpdateStatus sets an issue's status and returns the updated issue.
func (c *Client) UpdateStatus(ctx context.Context, id, status string) (Issue, error) {
	if status == "" {
		return Issue{}, fmt.Errorf("bd update %s: empty status", id)
	}
	return c.one(ctx, id, false, statusArgs(id, status)...)
}

// statusArgs is the argv of UpdateStatus (without --json).
func statusArgs(id, status string) []string { return []string{"update", id, "--status", status} }

// Claim atomically sets an issue in_progress with the actor as assignee.
// A claim by another actor fails with an *ExitError.
func (c *Client) Claim(ctx context.Context, id string) (Issue, error) {
	return c.one(ctx, id, false, claimArgs(id)...)
}

// claimArgs is the argv of Claim (without --json).
func claimArgs(id string) []string { return []string{"update", id, "--claim"} }

// AppendNotes appends text to an issue's notes (bd joins with a newline);
// it never replaces them.
func (c *Client) AppendNotes(ctx context.Context, id, text string) (Issue, error) {
	if text == "" {
		return Issue{}, fmt.Errorf("bd update %s: empty note", id)
	}
	if c.Redact != nil {
		text = c.Redact(text)
	}
	return c.one(ctx, id, false, appendNotesArgs(id, text)...)
}

// appendNotesArgs is the argv of AppendNotes (without --json).
func appendNotesArgs(id, text string) []string { return []string{"update", id, "--append-notes", text} }

// Set is one `bd update` flag, by its long name without the dashes (such
// as "priority" or "external-ref"), and the value to give it. An empty
// Value clears a text field.
type Set struct {
	Flag  string
	Value string
}

// Update runs `bd update <id> --<flag> <value>...` with the given flags in
// order and returns the updated issue. ralphd uses it to revert changes a
// mode may not make, so it takes any field bd's update sets without a Go
// field here for each. No flags is an error, because bd would print no
// JSON; so is a flag name bd could misread.
func (c *Client) Update(ctx context.Context, id string, sets ...Set) (Issue, error) {
	if len(sets) == 0 {
		return Issue{}, fmt.Errorf("bd update %s: no fields to change", id)
	}
	for _, s := range sets {
		if err := checkFlag(s.Flag); err != nil {
			return Issue{}, fmt.Errorf("bd update %s: %w", id, err)
		}
	}
	return c.one(ctx, id, false, updateArgs(id, sets...)...)
}

// updateArgs is the argv of Update (without --json).
func updateArgs(id string, sets ...Set) []string {
	args := []string{"update", id}
	for _, s := range sets {
		args = append(args, "--"+s.Flag, s.Value)
	}
	return args
}

// Close closes an issue with a reason and returns it. bd refuses, with an
// *ExitError, to close an issue that has open blockers.
func (c *Client) Close(ctx context.Context, id, reason string) (Issue, error) {
	return c.one(ctx, id, false, closeArgs(id, reason)...)
}

// closeArgs is the argv of Close (without --json).
func closeArgs(id, reason string) []string {
	return appendFlag([]string{"close", id}, "--reason", reason)
}

// Reopen reopens a closed issue, with an optional reason, and returns it.
// Reopening an open issue succeeds; bd then prints no issue, so Reopen
// reads it with show.
func (c *Client) Reopen(ctx context.Context, id, reason string) (Issue, error) {
	return c.one(ctx, id, true, reopenArgs(id, reason)...)
}

// reopenArgs is the argv of Reopen (without --json).
func reopenArgs(id, reason string) []string {
	return appendFlag([]string{"reopen", id}, "--reason", reason)
}

// DepAdd records that issueID depends on dependsOnID, so dependsOnID
// blocks issueID when depType is "" or DepBlocks.
func (c *Client) DepAdd(ctx context.Context, issueID, dependsOnID, depType string) error {
	return c.noResult(ctx, []string{issueID, dependsOnID}, depAddArgs(issueID, dependsOnID, depType))
}

// depAddArgs is the argv of DepAdd (without --json).
func depAddArgs(issueID, dependsOnID, depType string) []string {
	return appendFlag([]string{"dep", "add", issueID, dependsOnID}, "--type", depType)
}

// DepRemove removes the dependency of issueID on dependsOnID.
func (c *Client) DepRemove(ctx context.Context, issueID, dependsOnID string) error {
	return c.noResult(ctx, []string{issueID, dependsOnID}, depRemoveArgs(issueID, dependsOnID))
}

// depRemoveArgs is the argv of DepRemove (without --json).
func depRemoveArgs(issueID, dependsOnID string) []string {
	return []string{"dep", "remove", issueID, dependsOnID}
}

// Comments returns the comments on an issue, oldest first.
func (c *Client) Comments(ctx context.Context, id string) ([]Comment, error) {
	if err := checkID(id); err != nil {
		return nil, fmt.Errorf("bd comments: %w", err)
	}
	out, err := c.RunJSON(ctx, commentsArgs(id)...)
	if err != nil {
		return nil, err
	}
	cs, err := ParseComments(out)
	if err != nil {
		return nil, fmt.Errorf("bd comments %s: %w", id, err)
	}
	return cs, nil
}

// CommentAdd adds a comment to an issue.
func (c *Client) CommentAdd(ctx context.Context, id, text string) error {
	if err := checkID(id); err != nil {
		return fmt.Errorf("bd comments add: %w", err)
	}
	_, err := c.RunJSON(ctx, commentAddArgs(id, text)...)
	return err
}

// commentsArgs and commentAddArgs are the argv of Comments and CommentAdd
// (without --json).
func commentsArgs(id string) []string         { return []string{"comments", id} }
func commentAddArgs(id, text string) []string { return []string{"comments", "add", id, text} }

// LabelAdd adds a label to an issue.
func (c *Client) LabelAdd(ctx context.Context, id, label string) error {
	if err := checkLabel(label); err != nil {
		return fmt.Errorf("bd label add: %w", err)
	}
	return c.noResult(ctx, []string{id}, labelArgs("add", id, label))
}

// LabelRemove removes a label from an issue.
func (c *Client) LabelRemove(ctx context.Context, id, label string) error {
	if err := checkLabel(label); err != nil {
		return fmt.Errorf("bd label remove: %w", err)
	}
	return c.noResult(ctx, []string{id}, labelArgs("remove", id, label))
}

// labelArgs is the argv of LabelAdd (op "add") and LabelRemove ("remove"),
// without --json.
func labelArgs(op, id, label string) []string { return []string{"label", op, id, label} }

// RunJSON runs bd with args and --json (plus --actor when set) and returns
// its stdout. It fails with a typed error when bd is missing, times out,
// is cancelled or exits non-zero; it does not look at the output.
func (c *Client) RunJSON(ctx context.Context, args ...string) (out []byte, err error) {
	if c.OnCall != nil {
		start := time.Now()
		defer func() { c.OnCall(args, time.Since(start), err) }()
	}
	if c.OnWrite != nil && len(WriteTargets(args)) > 0 {
		w := &Write{Args: slices.Clone(args), Actor: c.Actor}
		c.OnWrite(w)
		defer c.OnWrite(w)
	}
	argv := jsonArgs(args)
	if c.Actor != "" {
		argv = append([]string{"--actor", c.Actor}, argv...)
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	bin := c.Bin
	if bin == "" {
		bin = "bd"
	}
	cmd := exec.CommandContext(callCtx, bin, argv...)
	cmd.Dir = c.Dir
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	// Bounded: a bd that floods its output must not take ralphd's memory.
	stdout := &capped{max: cmp.Or(c.maxOut, maxStdout)}
	stderr := &capped{max: maxStderr, drop: true}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Its own group, killed as a whole on cancel: nothing bd started
	// outlives a timeout.
	proc.SetGroup(cmd)
	proc.EndGroupOnCancel(cmd, 0)
	cmd.WaitDelay = waitDelay

	if err := cmd.Start(); err != nil {
		return nil, c.startError(bin, argv, err)
	}
	c.calls.Add(1)
	err = cmd.Wait()
	if stdout.over {
		return nil, fmt.Errorf("%s: %w (over %d bytes); check that bd is the beads CLI (bd version)", commandLine(argv), ErrOutputTooLarge, stdout.max)
	}
	if err == nil {
		return stdout.Bytes(), nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if cause := context.Cause(ctx); cause != nil && cause != ctxErr {
			return nil, fmt.Errorf("%s: %w: %w", commandLine(argv), ctxErr, cause)
		}
		return nil, fmt.Errorf("%s: %w", commandLine(argv), ctxErr)
	}
	// ErrWaitDelay after a clean exit means that something bd started kept
	// its output open after bd had exited; bd's own output is complete.
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState.Success() && callCtx.Err() == nil {
		return stdout.Bytes(), nil
	}
	if callCtx.Err() != nil {
		return nil, &TimeoutError{Args: argv, Timeout: timeout}
	}
	var xe *exec.ExitError
	if !errors.As(err, &xe) {
		return nil, fmt.Errorf("%s: %w", commandLine(argv), err)
	}
	return nil, exitError(c.Dir, argv, xe.ExitCode(), stdout.Bytes(), stderr.Bytes())
}

// exitError is the error ralphd makes of a bd run in dir that exited with
// a non-zero code: an *ExitError carrying bd's message, or a
// *NotInitializedError when bd found no tracker.
func exitError(dir string, argv []string, code int, stdout, stderr []byte) error {
	msg, ok := ParseErrorObject(stdout)
	if !ok {
		msg, _ = ParseErrorObject(stderr)
	}
	ee := &ExitError{Args: argv, Code: code, Stderr: trimStderr(string(stderr)), Message: msg}
	if strings.Contains(string(stderr), "no beads database found") ||
		strings.Contains(msg, "no beads database found") {
		return &NotInitializedError{Dir: dir, Err: ee}
	}
	return ee
}

// startError classifies a failure to start bd.
func (c *Client) startError(bin string, argv []string, err error) error {
	if c.Dir != "" {
		if _, serr := os.Stat(c.Dir); serr != nil {
			return fmt.Errorf("%s: working directory: %w", commandLine(argv), serr)
		}
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return &NotInstalledError{Bin: bin, Err: err}
	}
	return fmt.Errorf("%s: start: %w", commandLine(argv), err)
}

// issues runs a command that prints an issue array and parses it.
func (c *Client) issues(ctx context.Context, args []string) ([]Issue, error) {
	out, err := c.RunJSON(ctx, args...)
	if err != nil {
		return nil, err
	}
	issues, err := ParseIssues(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", commandLine(jsonArgs(args)), err)
	}
	return issues, nil
}

// one runs a mutation of issue id that prints the changed issue in an
// array. When showIfEmpty is set and bd printed no issue, it reads the
// issue with show instead.
func (c *Client) one(ctx context.Context, id string, showIfEmpty bool, args ...string) (Issue, error) {
	if err := checkID(id); err != nil {
		return Issue{}, fmt.Errorf("bd %s: %w", args[0], err)
	}
	out, err := c.RunJSON(ctx, args...)
	if err != nil {
		return Issue{}, err
	}
	if showIfEmpty && len(bytes.TrimSpace(out)) == 0 {
		return c.Show(ctx, id)
	}
	issues, err := ParseIssues(out)
	if err != nil {
		return Issue{}, fmt.Errorf("%s: %w", commandLine(jsonArgs(args)), err)
	}
	switch {
	case len(issues) == 1:
		return issues[0], nil
	case len(issues) == 0 && showIfEmpty:
		return c.Show(ctx, id)
	}
	return Issue{}, fmt.Errorf("%s: %w", commandLine(jsonArgs(args)),
		newBadJSON(out, "want one issue, got %d", len(issues)))
}

// noResult runs a mutation whose output ralphd does not need, after
// checking the issue ids among its operands.
func (c *Client) noResult(ctx context.Context, ids, args []string) error {
	for _, id := range ids {
		if err := checkID(id); err != nil {
			return fmt.Errorf("bd %s: %w", strings.Join(args[:2], " "), err)
		}
	}
	_, err := c.RunJSON(ctx, args...)
	return err
}

// checkID rejects an issue id bd would misread: empty, or starting with
// "-" (a flag).
func checkID(id string) error {
	switch {
	case id == "":
		return errors.New("empty issue id")
	case strings.HasPrefix(id, "-"):
		return fmt.Errorf("invalid issue id %q: starts with '-'", id)
	}
	return nil
}

// checkLabel rejects a label bd would misread: empty, or starting with
// "-" (a flag).
// checkFlag rejects a flag name that is not a long flag's: empty, or
// anything but lower-case letters, digits and inner dashes.
func checkFlag(name string) error {
	ok := name != "" && !strings.HasPrefix(name, "-") && !strings.HasSuffix(name, "-")
	for _, r := range name {
		ok = ok && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
	}
	if !ok {
		return fmt.Errorf("invalid flag name %q", name)
	}
	return nil
}

func checkLabel(l string) error {
	switch {
	case strings.TrimSpace(l) == "":
		return errors.New("empty label")
	case strings.HasPrefix(l, "-"):
		return fmt.Errorf("invalid label %q: starts with '-'", l)
	}
	return nil
}

// checkType refuses an issue type bd would read as something else: empty,
// a flag, or a list (bd splits --exclude-type on commas).
func checkType(t string) error {
	switch {
	case strings.TrimSpace(t) == "":
		return errors.New("empty issue type")
	case strings.HasPrefix(t, "-"), strings.Contains(t, ","):
		return fmt.Errorf("invalid issue type %q", t)
	}
	return nil
}

// appendFlag appends "flag value" when value is not empty. bd's flag
// parser takes the next argument as the value even when it starts with
// "-".
func appendFlag(args []string, flag, value string) []string {
	if value == "" {
		return args
	}
	return append(args, flag, value)
}

// jsonArgs returns args with --json appended, in a new slice.
func jsonArgs(args []string) []string {
	return append(append(make([]string, 0, len(args)+1), args...), "--json")
}

// Limits on one bd call's output. A listing of 10,000 issues with long
// descriptions is tens of MiB; stderr carries one message.
const (
	maxStdout = 512 << 20
	maxStderr = 1 << 20
)

// ErrOutputTooLarge is wrapped by the error of a bd call whose stdout went
// over maxStdout: not bd's JSON, whatever it is.
var ErrOutputTooLarge = errors.New("bd printed more than ralphd reads")

// capped is a buffer of at most max bytes. Past that, a write fails (and
// bd gets a broken pipe), or with drop set is thrown away. The buffer is
// a field, not embedded: an embedded bytes.Buffer's ReadFrom would let
// io.Copy go around Write and its limit.
type capped struct {
	buf  bytes.Buffer
	max  int
	drop bool
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); len(p) > room {
		c.over = true
		if !c.drop {
			return 0, ErrOutputTooLarge
		}
		c.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.buf.Write(p)
}

// Bytes returns what was kept.
func (c *capped) Bytes() []byte { return c.buf.Bytes() }

// String returns what was kept, as text.
func (c *capped) String() string { return c.buf.String() }
