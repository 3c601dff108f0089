package beads

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ralphd/ralphd/internal/text"
)

// ParseIssues parses the issue array bd prints for ready, list, blocked,
// show, update, close, reopen and dep list with --json, bare or wrapped in
// the BD_JSON_ENVELOPE=1 envelope {"data": [...], "schema_version": 1}.
// A single issue object is accepted as a list of one. An {"error": ...}
// object yields a *ReportedError; anything else that is not a list of
// issues yields a *BadJSONError. Unknown fields are ignored.
func ParseIssues(data []byte) ([]Issue, error) {
	root, err := payload(data)
	if err != nil {
		return nil, err
	}
	switch {
	case root.IsArray():
		var (
			issues []Issue
			perr   error
			n      int
		)
		root.ForEach(func(_, v gjson.Result) bool {
			is, err := parseIssueObject(v)
			if err != nil {
				perr = fmt.Errorf("item %d: %w", n, err)
				return false
			}
			issues = append(issues, is)
			n++
			return true
		})
		if perr != nil {
			return nil, newBadJSON(data, "%v", perr)
		}
		if issues == nil {
			issues = []Issue{}
		}
		return issues, nil
	case root.IsObject():
		if msg, ok := errorObject(root); ok {
			return nil, &ReportedError{Message: msg}
		}
		if root.Get("id").Exists() {
			is, err := parseIssueObject(root)
			if err != nil {
				return nil, newBadJSON(data, "%v", err)
			}
			return []Issue{is}, nil
		}
		return nil, newBadJSON(data, "want an array of issues, got an object without an id")
	default:
		return nil, newBadJSON(data, "want an array of issues, got %s", typeName(root))
	}
}

// ParseIssue parses one issue object, as bd prints for create --json (an
// object carrying "schema_version"), bare or enveloped. An array holding
// exactly one issue is accepted too. An {"error": ...} object yields a
// *ReportedError; anything else a *BadJSONError.
func ParseIssue(data []byte) (Issue, error) {
	root, err := payload(data)
	if err != nil {
		return Issue{}, err
	}
	if root.IsArray() {
		items := root.Array()
		if len(items) != 1 {
			return Issue{}, newBadJSON(data, "want one issue, got an array of %d", len(items))
		}
		root = items[0]
	}
	if !root.IsObject() {
		return Issue{}, newBadJSON(data, "want an issue object, got %s", typeName(root))
	}
	if msg, ok := errorObject(root); ok {
		return Issue{}, &ReportedError{Message: msg}
	}
	is, err := parseIssueObject(root)
	if err != nil {
		return Issue{}, newBadJSON(data, "%v", err)
	}
	return is, nil
}

// ParseStats parses bd stats --json (also printed by bd status --json),
// bare or enveloped: the counts under "summary".
func ParseStats(data []byte) (Stats, error) {
	root, err := payload(data)
	if err != nil {
		return Stats{}, err
	}
	if !root.IsObject() {
		return Stats{}, newBadJSON(data, "want a stats object, got %s", typeName(root))
	}
	if msg, ok := errorObject(root); ok {
		return Stats{}, &ReportedError{Message: msg}
	}
	sum := root.Get("summary")
	if !sum.IsObject() || !sum.Get("total_issues").Exists() {
		return Stats{}, newBadJSON(data, "want a stats summary with total_issues")
	}
	var s Stats
	fields := []struct {
		key string
		dst *int
	}{
		{"total_issues", &s.Total},
		{"open_issues", &s.Open},
		{"in_progress_issues", &s.InProgress},
		{"blocked_issues", &s.Blocked},
		{"closed_issues", &s.Closed},
		{"deferred_issues", &s.Deferred},
		{"ready_issues", &s.Ready},
	}
	for _, f := range fields {
		n, err := intValue(sum.Get(f.key))
		if err != nil {
			return Stats{}, newBadJSON(data, "summary.%s: %v", f.key, err)
		}
		*f.dst = n
	}
	return s, nil
}

// ParseErrorObject reports the message of an {"error": "...",
// "schema_version": 1} object, bare or enveloped, as bd prints on stdout
// or stderr for some failures. It returns false for anything else,
// including invalid JSON.
func ParseErrorObject(data []byte) (string, bool) {
	if !text.ValidJSON(data) {
		return "", false
	}
	root := unwrapEnvelope(gjson.ParseBytes(data))
	if !root.IsObject() {
		return "", false
	}
	return errorObject(root)
}

// payload validates data and returns the JSON value inside an optional
// envelope.
func payload(data []byte) (gjson.Result, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return gjson.Result{}, newBadJSON(data, "empty output")
	}
	if !text.ValidJSON(data) {
		return gjson.Result{}, newBadJSON(data, "invalid JSON")
	}
	return unwrapEnvelope(gjson.ParseBytes(data)), nil
}

// unwrapEnvelope returns the "data" of a BD_JSON_ENVELOPE=1 envelope, an
// object with exactly the keys "data" and "schema_version", and any other
// value unchanged.
func unwrapEnvelope(root gjson.Result) gjson.Result {
	if !root.IsObject() {
		return root
	}
	var data gjson.Result
	keys, hasData, hasVersion := 0, false, false
	root.ForEach(func(k, v gjson.Result) bool {
		keys++
		switch k.Str {
		case "data":
			hasData, data = true, v
		case "schema_version":
			hasVersion = true
		}
		return true
	})
	if hasData && hasVersion && keys == 2 {
		return data
	}
	return root
}

// errorObject reports the message of an object carrying an "error" key and
// no "id".
func errorObject(obj gjson.Result) (string, bool) {
	e := obj.Get("error")
	if !e.Exists() || obj.Get("id").Exists() {
		return "", false
	}
	switch e.Type {
	case gjson.String:
		return e.Str, true
	case gjson.Null:
		return "", false
	default:
		if m := e.Get("message"); m.Type == gjson.String {
			return m.Str, true
		}
		return e.Raw, true
	}
}

// parseIssueObject converts one issue object. It is the hot loop of
// ParseIssues: one pass over the keys, no lookups.
func parseIssueObject(obj gjson.Result) (Issue, error) {
	if !obj.IsObject() {
		return Issue{}, fmt.Errorf("want an issue object, got %s", typeName(obj))
	}
	var (
		is          Issue
		perr        error
		hasPriority bool
	)
	obj.ForEach(func(k, v gjson.Result) bool {
		var err error
		switch k.Str {
		case "id":
			is.ID, err = stringValue(v)
		case "title":
			is.Title, err = stringValue(v)
		case "description":
			is.Description, err = stringValue(v)
		case "design":
			is.Design, err = stringValue(v)
		case "acceptance_criteria":
			is.AcceptanceCriteria, err = stringValue(v)
		case "notes":
			is.Notes, err = stringValue(v)
		case "status":
			is.Status, err = stringValue(v)
		case "priority":
			is.Priority, err = priorityValue(v)
			hasPriority = true
		case "issue_type":
			is.IssueType, err = stringValue(v)
		case "assignee":
			is.Assignee, err = stringValue(v)
		case "owner":
			is.Owner, err = stringValue(v)
		case "created_by":
			is.CreatedBy, err = stringValue(v)
		case "close_reason":
			is.CloseReason, err = stringValue(v)
		case "parent":
			is.Parent, err = stringValue(v)
		case "external_ref":
			is.ExternalRef, err = stringValue(v)
		case "estimated_minutes":
			is.EstimatedMinutes, err = intValue(v)
		case "labels":
			is.Labels, err = stringsValue(v)
		case "dependencies":
			is.Dependencies, err = dependenciesValue(v)
		case "dependency_count":
			is.DependencyCount, err = intValue(v)
		case "dependent_count":
			is.DependentCount, err = intValue(v)
		case "comment_count":
			is.CommentCount, err = intValue(v)
		case "blocked_by":
			is.BlockedBy, err = idsValue(v)
		case "created_at":
			is.CreatedAt, err = timeValue(v)
		case "updated_at":
			is.UpdatedAt, err = timeValue(v)
		case "started_at":
			is.StartedAt, err = timeValue(v)
		case "closed_at":
			is.ClosedAt, err = timeValue(v)
		case "defer_until":
			is.DeferUntil, err = timeValue(v)
		case "due_at":
			is.DueAt, err = timeValue(v)
		case "comments":
			is.Comments, err = commentsValue(v)
		default:
			if text, ok := extraValue(v); ok {
				if is.Extra == nil {
					is.Extra = map[string]string{}
				}
				is.Extra[k.Str] = text
			}
			return true
		}
		if err != nil {
			perr = fmt.Errorf("field %q: %w", k.Str, err)
			return false
		}
		return true
	})
	if perr != nil {
		return Issue{}, perr
	}
	if is.ID == "" {
		return Issue{}, fmt.Errorf("issue without an id")
	}
	// bd always prints the priority, even 0; a missing one would silently
	// read as P0, the highest.
	if !hasPriority {
		return Issue{}, fmt.Errorf("issue %s without a priority", is.ID)
	}
	for i := range is.Dependencies {
		d := &is.Dependencies[i]
		if d.IssueID == "" {
			d.IssueID = is.ID
		}
		if is.Parent == "" && d.Type == DepParentChild && d.IssueID == is.ID {
			is.Parent = d.DependsOnID
		}
	}
	return is, nil
}

// dependenciesValue normalises both dependency shapes: raw edges
// {issue_id, depends_on_id, type} from list and ready, and full issue
// objects with "dependency_type" from show and dep list. IssueID is left
// empty when the edge does not name it; the caller fills in its own id.
func dependenciesValue(v gjson.Result) ([]Dependency, error) {
	if v.Type == gjson.Null {
		return nil, nil
	}
	if !v.IsArray() {
		return nil, fmt.Errorf("want an array, got %s", typeName(v))
	}
	var (
		deps []Dependency
		perr error
	)
	v.ForEach(func(_, e gjson.Result) bool {
		if !e.IsObject() {
			perr = fmt.Errorf("want dependency objects, got %s", typeName(e))
			return false
		}
		var (
			d            Dependency
			id, depType  string
			typ, status  string
			createdBy    string
			edge, hasTyp bool
		)
		e.ForEach(func(k, f gjson.Result) bool {
			var err error
			switch k.Str {
			case "issue_id":
				d.IssueID, err = stringValue(f)
			case "depends_on_id":
				d.DependsOnID, err = stringValue(f)
				edge = true
			case "type":
				typ, err = stringValue(f)
			case "dependency_type":
				depType, err = stringValue(f)
				hasTyp = true
			case "id":
				id, err = stringValue(f)
			case "status":
				status, err = stringValue(f)
			case "created_by":
				createdBy, err = stringValue(f)
			}
			if err != nil {
				perr = fmt.Errorf("dependency field %q: %w", k.Str, err)
				return false
			}
			return true
		})
		if perr != nil {
			return false
		}
		if edge {
			d.Type, d.CreatedBy = typ, createdBy
		} else {
			d.DependsOnID = id
			d.DependsOnStatus = status
			d.Type = depType
			if !hasTyp {
				d.Type = typ
			}
		}
		if d.DependsOnID == "" {
			perr = fmt.Errorf("dependency without a target id")
			return false
		}
		deps = append(deps, d)
		return true
	})
	if perr != nil {
		return nil, perr
	}
	return deps, nil
}

// extraValue reads a field Issue has no Go field for (Issue.Extra): a
// string as its value, null as absent, and any other value as compact
// JSON text, so that two printings of the same value compare equal.
func extraValue(v gjson.Result) (string, bool) {
	switch v.Type {
	case gjson.Null:
		return "", false
	case gjson.String:
		return v.Str, true
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(v.Raw)); err != nil {
		return v.Raw, true // valid already: the whole input was checked
	}
	return b.String(), true
}

// stringValue reads a JSON string; null reads as "".
func stringValue(v gjson.Result) (string, error) {
	switch v.Type {
	case gjson.String:
		return v.Str, nil
	case gjson.Null:
		return "", nil
	}
	return "", fmt.Errorf("want a string, got %s", typeName(v))
}

// stringsValue reads an array of strings; null reads as nil.
func stringsValue(v gjson.Result) ([]string, error) {
	if v.Type == gjson.Null {
		return nil, nil
	}
	if !v.IsArray() {
		return nil, fmt.Errorf("want an array of strings, got %s", typeName(v))
	}
	var (
		out  []string
		perr error
	)
	v.ForEach(func(_, e gjson.Result) bool {
		if e.Type != gjson.String {
			perr = fmt.Errorf("want an array of strings, got an element of type %s", typeName(e))
			return false
		}
		out = append(out, e.Str)
		return true
	})
	return out, perr
}

// idsValue reads blocked_by: an array of ids, or of objects with an "id"
// (the shape of bd ready --explain).
func idsValue(v gjson.Result) ([]string, error) {
	if v.Type == gjson.Null {
		return nil, nil
	}
	if !v.IsArray() {
		return nil, fmt.Errorf("want an array of ids, got %s", typeName(v))
	}
	var (
		out  []string
		perr error
	)
	v.ForEach(func(_, e gjson.Result) bool {
		switch {
		case e.Type == gjson.String:
			out = append(out, e.Str)
		case e.IsObject() && e.Get("id").Type == gjson.String:
			out = append(out, e.Get("id").Str)
		default:
			perr = fmt.Errorf("want ids, got an element of type %s", typeName(e))
			return false
		}
		return true
	})
	return out, perr
}

// maxInt bounds the numbers intValue accepts, so that the conversion to
// int is exact on every platform.
const maxInt = 1 << 31

// intValue reads an integral JSON number; null reads as 0.
func intValue(v gjson.Result) (int, error) {
	switch v.Type {
	case gjson.Null:
		return 0, nil
	case gjson.Number:
		f := v.Num
		if f != math.Trunc(f) || math.Abs(f) >= maxInt {
			return 0, fmt.Errorf("want an integer, got %s", v.Raw)
		}
		return int(f), nil
	}
	return 0, fmt.Errorf("want a number, got %s", typeName(v))
}

// priorityValue reads a priority: an integer as bd prints it, or the
// strings "2" or "P2" that bd accepts on its command line.
func priorityValue(v gjson.Result) (int, error) {
	if v.Type == gjson.Null {
		return 0, fmt.Errorf("want a priority, got null")
	}
	if v.Type != gjson.String {
		return intValue(v)
	}
	s := strings.TrimPrefix(strings.TrimPrefix(v.Str, "P"), "p")
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n >= maxInt {
		return 0, fmt.Errorf("want a priority, got %q", v.Str)
	}
	return n, nil
}

// timeValue reads an RFC 3339 timestamp, with or without fractional
// seconds; null and "" read as the zero time.
func timeValue(v gjson.Result) (time.Time, error) {
	s, err := stringValue(v)
	if err != nil || s == "" {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want an RFC 3339 timestamp, got %q", s)
	}
	return t, nil
}

// typeName names a JSON value's type for error messages.
func typeName(v gjson.Result) string {
	switch v.Type {
	case gjson.Null:
		if !v.Exists() {
			return "nothing"
		}
		return "null"
	case gjson.False, gjson.True:
		return "a boolean"
	case gjson.Number:
		return "a number"
	case gjson.String:
		return "a string"
	}
	if v.IsArray() {
		return "an array"
	}
	return "an object"
}

// ParseExport parses what `bd export` prints: one JSON object per line,
// each an issue ("_type": "issue", or no _type) with its labels,
// dependencies and comments, as `bd show --json --include-comments`
// prints them. Lines of another _type (bd's memories) are skipped; blank
// lines too. An empty export is no issues. A line that is not an issue
// object yields a *BadJSONError naming the line.
func ParseExport(data []byte) ([]Issue, error) {
	issues := []Issue{}
	for n, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if !text.ValidJSON(line) {
			return nil, newBadJSON(data, "line %d: invalid JSON", n+1)
		}
		root := gjson.ParseBytes(line)
		if !root.IsObject() {
			return nil, newBadJSON(data, "line %d: want an issue object, got %s", n+1, typeName(root))
		}
		if msg, ok := errorObject(root); ok {
			return nil, &ReportedError{Message: msg}
		}
		if t := root.Get("_type"); t.Exists() && t.String() != "issue" {
			continue
		}
		is, err := parseIssueObject(root)
		if err != nil {
			return nil, newBadJSON(data, "line %d: %v", n+1, err)
		}
		issues = append(issues, is)
	}
	return issues, nil
}

// ParseComments parses the array `bd comments <id> --json` prints.
func ParseComments(data []byte) ([]Comment, error) {
	if !text.ValidJSON(data) {
		return nil, fmt.Errorf("comments: not valid JSON")
	}
	return commentsValue(gjson.ParseBytes(data))
}

func commentsValue(v gjson.Result) ([]Comment, error) {
	if v.Type == gjson.Null {
		return nil, nil
	}
	if !v.IsArray() {
		return nil, fmt.Errorf("want an array of comments, got %s", v.Type)
	}
	var cs []Comment
	var perr error
	v.ForEach(func(_, c gjson.Result) bool {
		if !c.IsObject() {
			perr = fmt.Errorf("want a comment object, got %s", c.Type)
			return false
		}
		var cm Comment
		var err error
		if cm.ID, err = stringValue(c.Get("id")); err == nil {
			if cm.Author, err = stringValue(c.Get("author")); err == nil {
				if cm.Text, err = stringValue(c.Get("text")); err == nil {
					cm.CreatedAt, err = timeValue(c.Get("created_at"))
				}
			}
		}
		if err != nil {
			perr = fmt.Errorf("comment: %w", err)
			return false
		}
		cs = append(cs, cm)
		return true
	})
	return cs, perr
}
