package beads_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
)

// parseKind says which parser a fixture's JSON is for.
type parseKind int

const (
	kindIssues    parseKind = iota // an issue array: ParseIssues
	kindIssue                      // one issue object: ParseIssue
	kindStats                      // ParseStats
	kindError                      // an {"error": ...} object: ParseErrorObject
	kindNotIssues                  // JSON that is not issues: every issue parser refuses it
	kindJSONL                      // one issue object per line: ParseIssue per line
)

// parseCase is the expected parse of one fixture.
type parseCase struct {
	kind   parseKind
	stderr bool     // the JSON is on stderr, not stdout
	ids    []string // kindIssues/kindIssue/kindJSONL: the ids, in order
	msg    string   // kindError: bd's message
	check  func(is *is.I, issues []beads.Issue)
}

// Messages of the error fixtures.
const (
	msgNoIssues    = "no issues found matching the provided IDs"
	msgBadPrio9    = `invalid priority "9" (expected 0-4 or P0-P4, not words like high/medium/low)`
	msgBadPrio7    = `invalid priority "7" (expected 0-4 or P0-P4, not words like high/medium/low)`
	msgResolveZZZ  = `resolving ID rt-zzz: no issue found matching "rt-zzz"`
	msgBadSort     = "invalid sort policy 'random'. Valid values: hybrid, priority, oldest"
	msgNoTitle     = "title required (or use --file to create from markdown)"
	msgBadTypeFrob = "validation failed for issue : invalid issue type: frobtype"
)

// readyMixed is the ready order of the recorded repo: P0, then P1 newest
// first, then P2.
var readyMixed = []string{"rt-chn", "rt-wjd", "rt-cjz", "rt-wjd.1"}

// fromElsewhere is bd ready run from other places in the same repo.
var fromElsewhere = []string{"rt-wjd", "rt-kaz", "rt-2j9"}

// parseCases covers every fixture in testdata whose stdout or stderr is
// JSON; TestParseFixturesCovered enforces that.
var parseCases = map[string]parseCase{
	"beads-dir-env-from-elsewhere": {kind: kindIssues, ids: fromElsewhere},
	"dash-C-from-elsewhere":        {kind: kindIssues, ids: fromElsewhere},
	"db-flag-from-elsewhere":       {kind: kindIssues, ids: fromElsewhere},
	"from-subdir":                  {kind: kindIssues, ids: fromElsewhere},
	"global-sandbox-flag":          {kind: kindIssues, ids: fromElsewhere},

	"blocked-after-close-json": {kind: kindIssues, ids: []string{"rt-hz0"}},
	"blocked-empty":            {kind: kindIssues, ids: []string{}},
	"blocked-json": {kind: kindIssues, ids: []string{"rt-9e0", "rt-2j9", "rt-hz0"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].BlockedBy, []string{"rt-cjz"})
		is.Equal(got[2].BlockedBy, []string{"rt-chn"})
	}},

	"close-already-closed-json": {kind: kindIssues, ids: []string{"rt-cjz"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].Status, beads.StatusClosed)
		is.Equal(got[0].CloseReason, "again")
	}},
	"close-json": {kind: kindIssues, ids: []string{"rt-cjz"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].Status, beads.StatusClosed)
		is.Equal(got[0].CloseReason, "Implemented in commit abc123")
		is.True(!got[0].ClosedAt.IsZero())
	}},
	"close-multi-json":        {kind: kindIssues, ids: []string{"rt-c1x", "rt-9e0"}},
	"close-suggest-next-json": {kind: kindNotIssues},

	"comment-cmd-json":   {kind: kindNotIssues},
	"comments-add-json":  {kind: kindNotIssues},
	"comments-list-json": {kind: kindNotIssues},
	"context-json":       {kind: kindNotIssues},

	"create-all-fields-json": {kind: kindIssue, ids: []string{"rt-5fa"}, check: func(is *is.I, got []beads.Issue) {
		i := got[0]
		is.Equal(i.Description, "Desc text")
		is.Equal(i.Design, "Design text")
		is.Equal(i.AcceptanceCriteria, "AC text")
		is.Equal(i.Notes, "Notes text")
		is.Equal(i.Assignee, "alice")
		is.Equal(i.Priority, 1)
		is.Equal(i.IssueType, "bug")
		is.Equal(i.Labels, []string{"x", "y"})
	}},
	"create-bug-p0-json": {kind: kindIssue, ids: []string{"rt-chn"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].Priority, 0)
		is.Equal(got[0].IssueType, "bug")
	}},
	"create-child-json": {kind: kindIssue, ids: []string{"rt-wjd.1"}},
	"create-default-json": {kind: kindIssue, ids: []string{"rt-2j9"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].Priority, 2)
		is.Equal(got[0].IssueType, "task")
		is.Equal(got[0].Status, beads.StatusOpen)
		is.True(got[0].CreatedAt.Nanosecond() != 0) // create prints nanoseconds
	}},
	"create-deferred-json": {kind: kindIssue, ids: []string{"rt-999"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].Status, beads.StatusDeferred)
		is.True(got[0].DeferUntil.After(got[0].CreatedAt))
	}},
	"create-epic-json": {kind: kindIssue, ids: []string{"rt-wjd"}},
	"create-full-json": {kind: kindIssue, ids: []string{"rt-cjz"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].Labels, []string{"backend", "parser"})
		is.Equal(got[0].Notes, "initial note")
	}},
	"create-priority-P-form": {kind: kindIssue, ids: []string{"rt-c1x"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].Priority, 2)
	}},
	"create-type-story":     {kind: kindIssue, ids: []string{"rt-kaz"}},
	"create-with-deps-json": {kind: kindIssue, ids: []string{"rt-9e0"}},
	"create-with-id-and-dep-file-json": {kind: kindIssue, ids: []string{"rt-explicit1"}, check: func(is *is.I, got []beads.Issue) {
		want := time.Date(2026, 11, 21, 18, 36, 46, 824803697, time.UTC)
		is.True(got[0].CreatedAt.Equal(want))
	}},
	"env-beads-actor-create": {kind: kindIssue, ids: []string{"rt-0g5"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].CreatedBy, "env-agent")
	}},
	"global-actor-flag-create": {kind: kindIssue, ids: []string{"rt-1ib"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].CreatedBy, "ralph-agent")
	}},

	"defer-json":        {kind: kindIssues, ids: []string{"rt-o3o"}},
	"delete-force-json": {kind: kindNotIssues},

	"dep-add-discovered-from-json": {kind: kindNotIssues},
	"dep-add-json":                 {kind: kindNotIssues},
	"dep-add-related-json":         {kind: kindNotIssues},
	"dep-list-dependents-json":     {kind: kindIssues, ids: []string{"rt-2j9", "rt-9e0"}},
	"dep-list-json":                {kind: kindIssues, ids: []string{"rt-cjz"}},
	"dep-tree-json":                {kind: kindIssues, ids: []string{"rt-2j9", "rt-cjz"}},

	"envelope-ready-json": {kind: kindIssues, ids: []string{"rt-5fa"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].Title, "All fields issue")
		is.Equal(got[0].Labels, []string{"x", "y"})
	}},
	"envelope-show-unknown-json": {kind: kindError, msg: msgNoIssues},

	"err-bad-priority-update":   {kind: kindError, msg: msgBadPrio9},
	"err-bad-status-update":     {kind: kindError, msg: `invalid status "doing" (built-in: open, in_progress, blocked, deferred, closed, pinned, hooked; or configure custom statuses via 'bd config set status.custom')`},
	"err-unknown-id-close-json": {kind: kindError, msg: msgResolveZZZ},
	"err-unknown-id-show-json":  {kind: kindError, msg: msgNoIssues},
	"show-deleted-json":         {kind: kindError, msg: msgNoIssues},

	"err-bad-priority-create":              {kind: kindError, stderr: true, msg: msgBadPrio7},
	"err-bad-sort":                         {kind: kindError, stderr: true, msg: msgBadSort},
	"err-bad-type-create":                  {kind: kindError, stderr: true, msg: msgBadTypeFrob},
	"err-create-no-title-json":             {kind: kindError, stderr: true, msg: msgNoTitle},
	"export-jsonl":                         {kind: kindJSONL, ids: []string{"rt-f6l", "rt-chn", "rt-5fa"}},
	"label-add-json":                       {kind: kindNotIssues},
	"label-list-all-json":                  {kind: kindNotIssues},
	"label-list-json":                      {kind: kindNotIssues},
	"label-remove-json":                    {kind: kindNotIssues},
	"ready-explain-json":                   {kind: kindNotIssues},
	"statuses-json":                        {kind: kindNotIssues},
	"types-json":                           {kind: kindNotIssues},
	"version-json":                         {kind: kindNotIssues},
	"where-json":                           {kind: kindNotIssues},
	"server-where-clone-a-json":            {kind: kindNotIssues},
	"stats-json":                           {kind: kindStats},
	"status-json-no-activity":              {kind: kindStats},
	"list-empty":                           {kind: kindIssues, ids: []string{}},
	"ready-empty":                          {kind: kindIssues, ids: []string{}},
	"ready-claim-none-json":                {kind: kindIssues, ids: []string{}},
	"claim-ready-claim-nothing-ready-json": {kind: kindIssues, ids: []string{}},
	"claim-ready-claim-json":               {kind: kindIssues, ids: []string{"wt-q37"}, check: checkClaimed("eve")},
	"claim-alice-json":                     {kind: kindIssues, ids: []string{"wt-w4y"}, check: checkClaimed("alice")},
	"claim-unclaim-status-open-assignee-empty-json": {kind: kindIssues, ids: []string{"wt-w4y"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].Status, beads.StatusOpen)
		is.Equal(got[0].Assignee, "")
		is.True(!got[0].StartedAt.IsZero()) // a release keeps started_at
	}},
	"list-status-in-progress-json": {kind: kindIssues, ids: []string{"rt-c1x"}},
	"list-status-in-progress-json-2": {kind: kindIssues, ids: []string{"rt-chn", "rt-wjd.1", "rt-c1x"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[1].Parent, "rt-wjd")
	}},

	"list-all-json": {kind: kindIssues, ids: []string{"rt-chn", "rt-999", "rt-wjd", "rt-cjz", "rt-9e0", "rt-wjd.1", "rt-c1x", "rt-2j9", "rt-hz0", "rt-o3o"}},
	"list-json": {kind: kindIssues, ids: []string{"rt-chn", "rt-999", "rt-wjd", "rt-cjz", "rt-9e0", "rt-wjd.1", "rt-c1x", "rt-2j9", "rt-hz0", "rt-o3o"}, check: func(is *is.I, got []beads.Issue) {
		// Raw edges, as list prints them.
		is.Equal(got[4].Dependencies, []beads.Dependency{{IssueID: "rt-9e0", DependsOnID: "rt-cjz", Type: beads.DepBlocks, CreatedBy: "Test User"}})
		is.Equal(got[5].Dependencies, []beads.Dependency{{IssueID: "rt-wjd.1", DependsOnID: "rt-wjd", Type: beads.DepParentChild, CreatedBy: "Test User"}})
		is.Equal(got[5].Parent, "rt-wjd")
		is.Equal(got[3].DependentCount, 2)
		is.Equal(got[1].Status, beads.StatusDeferred)
		is.True(!got[1].DeferUntil.IsZero())
	}},
	"list-ready-json":         {kind: kindIssues, ids: []string{"rt-chn", "rt-cjz", "rt-wjd", "rt-wjd.1"}},
	"ready-after-close-json":  {kind: kindIssues, ids: []string{"rt-wjd", "rt-9e0", "rt-2j9"}},
	"ready-claim-json":        {kind: kindIssues, ids: []string{"rt-chn"}, check: checkClaimed("agent-1")},
	"ready-include-deferred":  {kind: kindIssues, ids: []string{"rt-chn", "rt-wjd", "rt-cjz", "rt-wjd.1"}},
	"ready-label-filter-json": {kind: kindIssues, ids: []string{"rt-2j9"}},
	"ready-limit-2":           {kind: kindIssues, ids: []string{"rt-chn", "rt-wjd"}},
	"ready-mixed-sort-hybrid": {kind: kindIssues, ids: []string{"rt-chn", "rt-cjz", "rt-wjd", "rt-wjd.1"}},
	"ready-mixed-sort-oldest": {kind: kindIssues, ids: []string{"rt-chn", "rt-cjz", "rt-wjd", "rt-wjd.1"}},
	"ready-mixed": {kind: kindIssues, ids: readyMixed, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[3].Parent, "rt-wjd")
		is.Equal(got[1].IssueType, "epic")
	}},

	"reopen-json": {kind: kindIssues, ids: []string{"rt-cjz"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].Status, beads.StatusOpen)
		is.Equal(got[0].CloseReason, "")
		is.True(got[0].ClosedAt.IsZero())
	}},

	"show-after-notes-json": {kind: kindIssues, ids: []string{"rt-cjz"}},
	"show-all-fields-json": {kind: kindIssues, ids: []string{"rt-5fa"}, check: func(is *is.I, got []beads.Issue) {
		// Fields without a Go field are kept by bd's JSON name.
		is.Equal(got[0].Extra, map[string]string{"spec_id": "SPEC-1", "metadata": `{"k":"v"}`})
	}},
	"show-all-fields-long-json": {kind: kindIssues, ids: []string{"rt-5fa"}},
	"show-blocked-json": {kind: kindIssues, ids: []string{"rt-2j9"}, check: func(is *is.I, got []beads.Issue) {
		// Full issue objects, as show prints them, become edges.
		is.Equal(got[0].Dependencies, []beads.Dependency{{
			IssueID: "rt-2j9", DependsOnID: "rt-cjz", Type: beads.DepBlocks, DependsOnStatus: beads.StatusOpen,
		}})
	}},
	"show-closed-json": {kind: kindIssues, ids: []string{"rt-cjz"}},
	"show-epic-json":   {kind: kindIssues, ids: []string{"rt-wjd"}},
	"show-json":        {kind: kindIssues, ids: []string{"rt-cjz"}},
	"show-multi-json":  {kind: kindIssues, ids: []string{"rt-cjz", "rt-chn"}},
	"show-reopened-json": {kind: kindIssues, ids: []string{"rt-cjz"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].Status, beads.StatusOpen)
	}},
	"show-with-comments-json": {kind: kindIssues, ids: []string{"rt-2j9"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].CommentCount, 3)
		is.Equal(got[0].Dependencies, []beads.Dependency{{
			IssueID: "rt-2j9", DependsOnID: "rt-cjz", Type: beads.DepBlocks, DependsOnStatus: beads.StatusClosed,
		}})
	}},

	"update-acceptance-json": {kind: kindIssues, ids: []string{"rt-2j9"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].AcceptanceCriteria, "CI runs go test on every push")
	}},
	"update-append-notes": {kind: kindIssues, ids: []string{"rt-cjz"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].Notes, "second notes text\nappended line")
	}},
	"update-assignee-json":               {kind: kindIssues, ids: []string{"rt-hz0"}},
	"update-claim-again-same-actor-json": {kind: kindIssues, ids: []string{"rt-wjd.1"}, check: checkClaimed("Test User")},
	"update-claim-json":                  {kind: kindIssues, ids: []string{"rt-wjd.1"}, check: checkClaimed("Test User")},
	"update-description-title-json": {kind: kindIssues, ids: []string{"rt-hz0"}, check: func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].Title, "Write user guide")
		is.Equal(got[0].Description, "Write the user guide.")
	}},
	"update-labels-json": {kind: kindIssues, ids: []string{"rt-hz0"}, check: func(is *is.I, got []beads.Issue) {
		is.True(got[0].HasLabel("docs"))
		is.True(got[0].HasLabel("later"))
	}},
	"update-notes-1":             {kind: kindIssues, ids: []string{"rt-cjz"}},
	"update-notes-2":             {kind: kindIssues, ids: []string{"rt-cjz"}},
	"update-priority-json":       {kind: kindIssues, ids: []string{"rt-2j9"}, check: func(is *is.I, got []beads.Issue) { is.Equal(got[0].Priority, 0) }},
	"update-status-blocked-json": {kind: kindIssues, ids: []string{"rt-hz0"}, check: checkStatus(beads.StatusBlocked)},
	"update-status-closed-json":  {kind: kindIssues, ids: []string{"rt-hz0"}, check: checkStatus(beads.StatusClosed)},
	"update-status-open-json":    {kind: kindIssues, ids: []string{"rt-hz0"}, check: checkStatus(beads.StatusOpen)},
	"update-type-json":           {kind: kindIssues, ids: []string{"rt-hz0"}, check: func(is *is.I, got []beads.Issue) { is.Equal(got[0].IssueType, "task") }},
}

// checkClaimed checks a claimed issue.
func checkClaimed(actor string) func(is *is.I, got []beads.Issue) {
	return func(is *is.I, got []beads.Issue) {
		is.Equal(got[0].Status, beads.StatusInProgress)
		is.Equal(got[0].Assignee, actor)
		is.True(!got[0].StartedAt.IsZero())
	}
}

// checkStatus checks the first issue's status.
func checkStatus(status string) func(is *is.I, got []beads.Issue) {
	return func(is *is.I, got []beads.Issue) { is.Equal(got[0].Status, status) }
}

// isJSONL reports whether data is two or more lines of JSON objects.
func isJSONL(data []byte) bool {
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(lines) < 2 {
		return false
	}
	for _, l := range lines {
		if !json.Valid(l) {
			return false
		}
	}
	return true
}

// TestParseFixturesCovered fails when a fixture with JSON output has no
// parse case, so that every recorded shape stays tested.
func TestParseFixturesCovered(t *testing.T) {
	is := is.New(t)
	seen := 0
	for _, fx := range loadFixtures(t) {
		outJSON := json.Valid(fx.Stdout) || isJSONL(fx.Stdout)
		errJSON := json.Valid(fx.Stderr)
		c, ok := parseCases[fx.Name]
		if outJSON || errJSON {
			seen++
			if !ok {
				t.Errorf("fixture %s has JSON output but no parse case", fx.Name)
				continue
			}
			if c.stderr != errJSON || c.stderr == outJSON {
				t.Errorf("fixture %s: case says stderr=%v, but stdout JSON=%v and stderr JSON=%v", fx.Name, c.stderr, outJSON, errJSON)
			}
		} else if ok {
			t.Errorf("fixture %s has a parse case but no JSON output", fx.Name)
		}
	}
	is.Equal(seen, len(parseCases)) // every case names a fixture
}

func TestParseFixtures(t *testing.T) {
	for _, fx := range loadFixtures(t) {
		c, ok := parseCases[fx.Name]
		if !ok {
			continue
		}
		t.Run(fx.Name, func(t *testing.T) {
			is := is.New(t)
			data := fx.Stdout
			if c.stderr {
				data = fx.Stderr
			}
			switch c.kind {
			case kindIssues:
				got, err := beads.ParseIssues(data)
				is.NoErr(err)
				is.Equal(ids(got), c.ids)
				compareWithOracle(t, data, got)
				if c.check != nil {
					c.check(is, got)
				}
			case kindIssue:
				got, err := beads.ParseIssue(data)
				is.NoErr(err)
				is.Equal(got.ID, c.ids[0])
				compareWithOracle(t, data, []beads.Issue{got})
				if c.check != nil {
					c.check(is, []beads.Issue{got})
				}
				// The issue parsers agree on a single object.
				list, err := beads.ParseIssues(data)
				is.NoErr(err)
				is.Equal(list, []beads.Issue{got})
			case kindJSONL:
				var got []beads.Issue
				for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
					i, err := beads.ParseIssue(line)
					is.NoErr(err)
					compareWithOracle(t, line, []beads.Issue{i})
					got = append(got, i)
				}
				is.Equal(ids(got), c.ids)
			case kindStats:
				got, err := beads.ParseStats(data)
				is.NoErr(err)
				is.Equal(got, beads.Stats{Total: 10, Open: 7, InProgress: 1, Blocked: 3, Closed: 0, Deferred: 2, Ready: 4})
			case kindError:
				msg, ok := beads.ParseErrorObject(data)
				is.True(ok)
				is.Equal(msg, c.msg)
				_, err := beads.ParseIssues(data)
				var re *beads.ReportedError
				is.True(errors.As(err, &re)) // ParseIssues reports bd's error
				is.Equal(re.Message, c.msg)
				_, err = beads.ParseIssue(data)
				is.True(errors.As(err, &re)) // ParseIssue reports bd's error
				_, err = beads.ParseStats(data)
				is.True(errors.As(err, &re)) // ParseStats reports bd's error
			case kindNotIssues:
				_, err := beads.ParseIssues(data)
				is.True(errors.Is(err, beads.ErrBadJSON)) // ParseIssues refuses non-issues
				_, err = beads.ParseIssue(data)
				is.True(errors.Is(err, beads.ErrBadJSON)) // ParseIssue refuses non-issues
				_, ok := beads.ParseErrorObject(data)
				is.True(!ok)
			}
			if c.kind != kindError {
				_, ok := beads.ParseErrorObject(data)
				is.True(!ok) // only error objects are errors
			}
			if c.kind != kindStats {
				_, err := beads.ParseStats(data)
				is.True(err != nil) // only stats are stats
			}
		})
	}
}

// ids lists the issues' ids.
func ids(issues []beads.Issue) []string {
	out := make([]string, 0, len(issues))
	for _, i := range issues {
		out = append(out, i.ID)
	}
	return out
}

// compareWithOracle decodes data again with encoding/json and checks
// every parsed field against it.
func compareWithOracle(t *testing.T, data []byte, got []beads.Issue) {
	t.Helper()
	is := is.NewRelaxed(t)
	var raw any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		t.Fatalf("oracle decode: %v", err)
	}
	if m, ok := raw.(map[string]any); ok {
		if d, ok := m["data"]; ok && len(m) == 2 {
			raw = d
		}
	}
	var items []any
	switch v := raw.(type) {
	case []any:
		items = v
	case map[string]any:
		items = []any{v}
	}
	if len(items) != len(got) {
		t.Fatalf("oracle has %d items, parser %d", len(items), len(got))
	}
	for n, item := range items {
		m := item.(map[string]any)
		g := got[n]
		str := func(k string) string { s, _ := m[k].(string); return s }
		num := func(k string) int {
			v, _ := m[k].(json.Number)
			i, _ := v.Int64()
			return int(i)
		}
		ts := func(k string) time.Time {
			s := str(k)
			if s == "" {
				return time.Time{}
			}
			tm, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				t.Fatalf("oracle %s: %v", k, err)
			}
			return tm
		}
		strs := func(k string) []string {
			var out []string
			for _, x := range asSlice(m[k]) {
				out = append(out, x.(string))
			}
			return out
		}
		is.Equal(g.ID, str("id"))
		is.Equal(g.Title, str("title"))
		is.Equal(g.Description, str("description"))
		is.Equal(g.Design, str("design"))
		is.Equal(g.AcceptanceCriteria, str("acceptance_criteria"))
		is.Equal(g.Notes, str("notes"))
		is.Equal(g.Status, str("status"))
		is.Equal(g.Priority, num("priority"))
		is.Equal(g.IssueType, str("issue_type"))
		is.Equal(g.Assignee, str("assignee"))
		is.Equal(g.Owner, str("owner"))
		is.Equal(g.CreatedBy, str("created_by"))
		is.Equal(g.CloseReason, str("close_reason"))
		is.Equal(g.Labels, strs("labels"))
		is.Equal(g.BlockedBy, strs("blocked_by"))
		is.Equal(g.DependencyCount, num("dependency_count"))
		is.Equal(g.DependentCount, num("dependent_count"))
		is.Equal(g.CommentCount, num("comment_count"))
		is.True(g.CreatedAt.Equal(ts("created_at")))
		is.True(g.UpdatedAt.Equal(ts("updated_at")))
		is.True(g.StartedAt.Equal(ts("started_at")))
		is.True(g.ClosedAt.Equal(ts("closed_at")))
		is.True(g.DeferUntil.Equal(ts("defer_until")))
		if p := str("parent"); p != "" {
			is.Equal(g.Parent, p)
		}
		for k, text := range g.Extra {
			v, ok := m[k]
			is.True(ok) // an extra field is one bd printed
			if s, ok := v.(string); ok {
				is.Equal(text, s) // a string extra field is its value
				continue
			}
			dec := json.NewDecoder(strings.NewReader(text))
			dec.UseNumber()
			var back any
			is.NoErr(dec.Decode(&back))
			is.Equal(back, v) // any other extra field is its JSON
		}
		deps := asSlice(m["dependencies"])
		is.Equal(len(g.Dependencies), len(deps))
		for k := 0; k < len(deps) && k < len(g.Dependencies); k++ {
			d := deps[k].(map[string]any)
			gd := g.Dependencies[k]
			is.Equal(gd.IssueID, g.ID)
			if to, ok := d["depends_on_id"]; ok {
				is.Equal(gd.DependsOnID, to)
				is.Equal(gd.Type, d["type"])
				is.Equal(gd.DependsOnStatus, "")
				by, _ := d["created_by"].(string)
				is.Equal(gd.CreatedBy, by)
			} else {
				is.Equal(gd.DependsOnID, d["id"])
				is.Equal(gd.Type, d["dependency_type"])
				is.Equal(gd.DependsOnStatus, d["status"])
				is.Equal(gd.CreatedBy, "") // the issue's, not the edge's
			}
		}
	}
}

// asSlice returns v as a slice, or nil.
func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func TestParseIssuesShapes(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []beads.Issue
	}{
		{
			name:  "empty array",
			input: "[]\n\n",
			want:  []beads.Issue{},
		},
		{
			name:  "envelope around an empty array",
			input: `{"data": [], "schema_version": 1}`,
			want:  []beads.Issue{},
		},
		{
			name:  "single object is a list of one",
			input: `{"id":"a-1","title":"t","priority":3}`,
			want:  []beads.Issue{{ID: "a-1", Title: "t", Priority: 3}},
		},
		{
			name: "unknown fields of every type are kept as text; the estimate is read",
			input: `[{"id":"a-1","priority":1,"metadata":{"k": [1, {"x":null}]},"ephemeral":true,"estimated_minutes":90,` +
				`"future":[[]],"spec_id":"S-1","gone":null}]`,
			want: []beads.Issue{{ID: "a-1", Priority: 1, EstimatedMinutes: 90, Extra: map[string]string{
				"metadata": `{"k":[1,{"x":null}]}`, "ephemeral": "true", "future": "[[]]", "spec_id": "S-1",
			}}},
		},
		{
			name:  "null optional fields read as zero",
			input: `[{"id":"a-1","priority":0,"title":null,"labels":null,"dependencies":null,"closed_at":null,"comment_count":null}]`,
			want:  []beads.Issue{{ID: "a-1"}},
		},
		{
			name:  "priority in the command-line forms",
			input: `[{"id":"a","priority":"P3"},{"id":"b","priority":"1"},{"id":"c","priority":4.0}]`,
			want:  []beads.Issue{{ID: "a", Priority: 3}, {ID: "b", Priority: 1}, {ID: "c", Priority: 4}},
		},
		{
			name: "timestamps with and without fractions and offsets",
			input: `[{"id":"a","priority":1,"created_at":"2026-11-21T18:31:42Z","updated_at":"2026-11-21T18:31:42.5Z",` +
				`"started_at":"2026-11-21T20:31:42+02:00","closed_at":""}]`,
			want: []beads.Issue{{
				ID: "a", Priority: 1,
				CreatedAt: time.Date(2026, 11, 21, 18, 31, 42, 0, time.UTC),
				UpdatedAt: time.Date(2026, 11, 21, 18, 31, 42, 5e8, time.UTC),
				StartedAt: time.Date(2026, 11, 21, 18, 31, 42, 0, time.UTC),
			}},
		},
		{
			name: "show-style parent-child dependency sets Parent",
			input: `[{"id":"e.1","priority":2,"dependencies":[{"id":"e","title":"Epic","priority":1,"status":"open",` +
				`"dependency_type":"parent-child"}]}]`,
			want: []beads.Issue{{ID: "e.1", Priority: 2, Parent: "e", Dependencies: []beads.Dependency{
				{IssueID: "e.1", DependsOnID: "e", Type: beads.DepParentChild, DependsOnStatus: "open"},
			}}},
		},
		{
			name:  "dependencies before the id still get the issue's id",
			input: `{"dependencies":[{"depends_on_id":"b","type":"blocks"}],"id":"a","priority":1}`,
			want: []beads.Issue{{ID: "a", Priority: 1, Dependencies: []beads.Dependency{
				{IssueID: "a", DependsOnID: "b", Type: beads.DepBlocks},
			}}},
		},
		{
			name:  "explicit parent field wins over the dependency",
			input: `[{"id":"x","priority":2,"parent":"p","dependencies":[{"issue_id":"x","depends_on_id":"q","type":"parent-child"}]}]`,
			want: []beads.Issue{{ID: "x", Priority: 2, Parent: "p", Dependencies: []beads.Dependency{
				{IssueID: "x", DependsOnID: "q", Type: beads.DepParentChild},
			}}},
		},
		{
			name:  "blocked_by as objects (ready --explain shape)",
			input: `[{"id":"a","priority":2,"blocked_by":[{"id":"b","priority":1}],"blocked_by_count":1}]`,
			want:  []beads.Issue{{ID: "a", Priority: 2, BlockedBy: []string{"b"}, Extra: map[string]string{"blocked_by_count": "1"}}},
		},
		{
			name:  "object with data and other keys is not an envelope",
			input: `{"data":[],"schema_version":1,"id":"a","priority":0}`,
			want:  []beads.Issue{{ID: "a", Extra: map[string]string{"data": "[]", "schema_version": "1"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, err := beads.ParseIssues([]byte(tt.input))
			is.NoErr(err)
			is.Equal(len(got), len(tt.want))
			for i := range got {
				is.True(got[i].CreatedAt.Equal(tt.want[i].CreatedAt))
				is.True(got[i].UpdatedAt.Equal(tt.want[i].UpdatedAt))
				is.True(got[i].StartedAt.Equal(tt.want[i].StartedAt))
				got[i].CreatedAt, got[i].UpdatedAt, got[i].StartedAt = time.Time{}, time.Time{}, time.Time{}
				tt.want[i].CreatedAt, tt.want[i].UpdatedAt, tt.want[i].StartedAt = time.Time{}, time.Time{}, time.Time{}
				is.Equal(got[i], tt.want[i])
			}
		})
	}
}

func TestParseIssuesBadInput(t *testing.T) {
	long := `[{"id":"a","priority":1,"title":"` + strings.Repeat("x", 400) + `"` // truncated
	tests := []struct {
		name   string
		input  string
		reason string // a substring of the reason
	}{
		{"empty", "", "empty output"},
		{"blank", " \n\t", "empty output"},
		{"plain text", "No updates specified\n", "invalid JSON"},
		{"truncated", long, "invalid JSON"},
		{"number", "42", "got a number"},
		{"array of strings", `["ci"]`, "item 0"},
		{"object without id", `{"status":"added"}`, "without an id"},
		{"issue without id", `[{"title":"x","priority":1}]`, "without an id"},
		{"issue without priority", `[{"id":"a"}]`, "without a priority"},
		{"null priority", `[{"id":"a","priority":null}]`, "priority"},
		{"fractional priority", `[{"id":"a","priority":1.5}]`, "want an integer"},
		{"huge priority", `[{"id":"a","priority":1e300}]`, "want an integer"},
		{"word priority", `[{"id":"a","priority":"high"}]`, "want a priority"},
		{"id not a string", `[{"id":7,"priority":1}]`, "want a string"},
		{"bad timestamp", `[{"id":"a","priority":1,"created_at":"yesterday"}]`, "RFC 3339"},
		{"labels not strings", `[{"id":"a","priority":1,"labels":[1]}]`, "array of strings"},
		{"dependencies not an array", `[{"id":"a","priority":1,"dependencies":{}}]`, "want an array"},
		{"dependency without target", `[{"id":"a","priority":1,"dependencies":[{"type":"blocks"}]}]`, "target id"},
		{"count not a number", `[{"id":"a","priority":1,"comment_count":"3"}]`, "want a number"},
		{"second item broken", `[{"id":"a","priority":1},{"id":"b"}]`, "item 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			_, err := beads.ParseIssues([]byte(tt.input))
			var bj *beads.BadJSONError
			is.True(errors.As(err, &bj)) // a typed error
			is.True(errors.Is(err, beads.ErrBadJSON))
			is.True(strings.Contains(bj.Reason, tt.reason)) // the reason says what is wrong
			head := tt.input
			if len(head) > beads.HeadLen {
				head = head[:beads.HeadLen]
			}
			is.Equal(bj.Head, head) // the error keeps the first 200 bytes
			is.Equal(bj.Len, len(tt.input))
			is.True(strings.Contains(err.Error(), "output starts with"))
		})
	}
}

func TestParseIssue(t *testing.T) {
	is := is.New(t)
	got, err := beads.ParseIssue([]byte(`[{"id":"a","priority":1}]`))
	is.NoErr(err)
	is.Equal(got.ID, "a") // an array of one is accepted

	got, err = beads.ParseIssue([]byte(`{"data":{"id":"b","priority":2,"schema_version":1},"schema_version":1}`))
	is.NoErr(err)
	is.Equal(got.ID, "b") // enveloped object

	_, err = beads.ParseIssue([]byte(`[{"id":"a","priority":1},{"id":"b","priority":1}]`))
	is.True(errors.Is(err, beads.ErrBadJSON)) // two issues are not one

	_, err = beads.ParseIssue([]byte(`[]`))
	is.True(errors.Is(err, beads.ErrBadJSON)) // no issue is not one

	_, err = beads.ParseIssue([]byte(`"rt-1"`))
	is.True(errors.Is(err, beads.ErrBadJSON))

	_, err = beads.ParseIssue([]byte(`{"id":"a","priority":"x"}`))
	is.True(errors.Is(err, beads.ErrBadJSON))
}

func TestParseStatsBadInput(t *testing.T) {
	for _, input := range []string{
		``, `nope`, `[]`, `{"schema_version":1}`, `{"summary":[]}`,
		`{"summary":{"total_issues":"10"}}`, `{"summary":{"open_issues":1.5}}`,
	} {
		t.Run(input, func(t *testing.T) {
			is := is.New(t)
			_, err := beads.ParseStats([]byte(input))
			is.True(errors.Is(err, beads.ErrBadJSON))
		})
	}
	is := is.New(t)
	s, err := beads.ParseStats([]byte(`{"data":{"schema_version":1,"summary":{"total_issues":3,"closed_issues":1}},"schema_version":1}`))
	is.NoErr(err)
	is.Equal(s, beads.Stats{Total: 3, Closed: 1}) // enveloped, missing counts are zero
}

func TestParseErrorObject(t *testing.T) {
	tests := []struct {
		input string
		msg   string
		ok    bool
	}{
		{`{"error":"boom","schema_version":1}`, "boom", true},
		{`{"data":{"error":"boom"},"schema_version":1}`, "boom", true},
		{`{"error":{"message":"nested"}}`, "nested", true},
		{`{"error":{"code":3}}`, `{"code":3}`, true},
		{`{"error":null}`, "", false},
		{`{"id":"a","error":"field of an issue"}`, "", false},
		{`[{"error":"x"}]`, "", false},
		{`Error: no beads database found`, "", false},
		{``, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			is := is.New(t)
			msg, ok := beads.ParseErrorObject([]byte(tt.input))
			is.Equal(ok, tt.ok)
			is.Equal(msg, tt.msg)
		})
	}
}

func TestReportedErrorIssueNotFound(t *testing.T) {
	is := is.New(t)
	_, err := beads.ParseIssues(loadFixture(t, "err-unknown-id-show-json").Stdout)
	is.True(errors.Is(err, beads.ErrIssueNotFound))
	_, err = beads.ParseIssues([]byte(`{"error":"invalid status"}`))
	is.True(!errors.Is(err, beads.ErrIssueNotFound))
	is.True(err != nil)
}

// TestParseExport: `bd export`'s JSON lines, as real bd 1.0.5 printed them
// (the recorded run), and the shapes around them.
func TestParseExport(t *testing.T) {
	recorded := loadFixture(t, "export-jsonl").Stdout
	for _, tc := range []struct {
		name    string
		in      string
		ids     []string
		badJSON bool
	}{
		{"recorded", string(recorded), []string{"rt-f6l", "rt-chn", "rt-5fa"}, false},
		{"empty", "", []string{}, false},
		{"blank lines and a memory", "\n{\"_type\":\"memory\",\"key\":\"k\",\"value\":\"v\"}\n\n{\"id\":\"a-1\",\"priority\":1}\n", []string{"a-1"}, false},
		{"no trailing newline", `{"_type":"issue","id":"a-1","priority":1}`, []string{"a-1"}, false},
		{"a line cut short", "{\"id\":\"a-1\",\"priority\":1}\n{\"id\":\"a-2\",", nil, true},
		{"an array line", "[{\"id\":\"a-1\",\"priority\":1}]\n", nil, true},
		{"an issue without an id", "{\"_type\":\"issue\",\"priority\":1}\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			issues, err := beads.ParseExport([]byte(tc.in))
			var bj *beads.BadJSONError
			if tc.badJSON {
				if !errors.As(err, &bj) {
					t.Fatalf("err = %v, want a BadJSONError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ids := []string{}
			for _, is := range issues {
				ids = append(ids, is.ID)
			}
			if !reflect.DeepEqual(ids, tc.ids) {
				t.Fatalf("ids %v, want %v", ids, tc.ids)
			}
		})
	}
	issues, err := beads.ParseExport(recorded)
	if err != nil {
		t.Fatal(err)
	}
	if all := issues[2]; all.Extra["spec_id"] != "SPEC-1" || !reflect.DeepEqual(all.Labels, []string{"x", "y"}) || all.Notes != "Notes text" {
		t.Fatalf("the recorded all-fields issue read as %+v", all)
	}
}
